import { integer } from "../lib/decimal-text.js";

type QueryInteger = ReturnType<typeof integer>;

/**
 * An integer in a query string, from `min` to `max`, optional or with a default, in decimal digits
 * only (lib/decimal-text.ts: `0x10`, `1e1`, `5.0`, `+5`, ` 5` or an empty value is 422 naming the
 * parameter). The document says `integer` with its bounds and default (the preprocessing is not
 * part of the input's JSON Schema). The default is a prefault, the input used when the parameter
 * is absent: zod's document drops a `.default()` from a schema that transforms its input, though
 * it would answer the same.
 */
export function queryInteger(bounds: {
  min: number;
  max: number;
  default: number;
}): ReturnType<QueryInteger["prefault"]>;
export function queryInteger(bounds: {
  min: number;
  max: number;
}): ReturnType<QueryInteger["optional"]>;
export function queryInteger(bounds: { min: number; max: number; default?: number }) {
  const parsed = integer(bounds.min, bounds.max);
  return bounds.default === undefined ? parsed.optional() : parsed.prefault(bounds.default);
}
