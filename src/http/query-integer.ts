import { z } from "zod";

/**
 * Decimal digits, with a sign only to say a number is negative. `z.coerce.number()` read a query
 * value with `Number()`, which also takes `0x10`, `1e1`, `5.0`, ` 5` and an empty value (as 0):
 * a client sending one of those has a bug the API hid, and another server reading the same
 * documented `integer` would refuse it.
 */
const DECIMAL_INTEGER = /^-?[0-9]+$/;

const integerOf = (min: number, max: number) =>
  z.preprocess(
    // Anything else stays a string, which the number schema refuses: 422 naming the parameter.
    (value) => (typeof value === "string" && DECIMAL_INTEGER.test(value) ? Number(value) : value),
    z
      // Only the type's message is ours: the bounds keep zod's, which state them.
      .number({
        error: (issue) =>
          issue.code === "invalid_type" ? "must be an integer in decimal digits" : undefined,
      })
      .int()
      .min(min)
      .max(max),
  );

/**
 * An integer in a query string, from `min` to `max`, optional or with a default. The document
 * says `integer` with its bounds and default (the preprocessing is not part of the input's JSON
 * Schema). The default is a prefault, the input used when the parameter is absent: zod's document
 * drops a `.default()` from a schema that transforms its input, though it would answer the same.
 */
export function queryInteger(bounds: {
  min: number;
  max: number;
  default: number;
}): z.ZodPrefault<ReturnType<typeof integerOf>>;
export function queryInteger(bounds: {
  min: number;
  max: number;
}): z.ZodOptional<ReturnType<typeof integerOf>>;
export function queryInteger(bounds: { min: number; max: number; default?: number }) {
  const integer = integerOf(bounds.min, bounds.max);
  return bounds.default === undefined ? integer.optional() : integer.prefault(bounds.default);
}
