import type { Ajv } from "ajv";
import addFormats from "ajv-formats";
import { urlFormat } from "./url-format.js";

/**
 * Callers' schemas use `format` (email, uri, date-time…) and expect it checked, not ignored.
 * `url` is replaced: ajv-formats' expression backtracks polynomially (url-format.ts).
 */
export function withFormats<T extends Ajv>(ajv: T): T {
  addFormats.default(ajv);
  ajv.addFormat("url", urlFormat);
  return ajv;
}

/**
 * A JSON Schema validator's verdict on `value`, or "endless" when validating recursed until the
 * stack ran out: Ajv compiles a `$ref` cycle that never reaches a value (`{"$ref": "#"}`), then
 * overflows on every value that reaches it. That is the schema's fault, never the value's: the
 * custom tools' schemas (tools/custom/json-schema.ts) and json-schema-validate both say so.
 */
export function validated(
  validate: (value: unknown) => unknown,
  value: unknown,
): boolean | "endless" {
  try {
    return validate(value) === true;
  } catch (err) {
    if (err instanceof RangeError) return "endless";
    throw err;
  }
}
