import { z } from "zod";

/**
 * A number written in decimal digits, with a sign only to say it is negative (its bounds then
 * refuse it), and for a number that takes fractions, one after a point: how the gateway reads the
 * numbers of its settings (config.ts, workers/config.ts) and of query strings
 * (http/query-integer.ts). `z.coerce.number()` read them with `Number()`, which also takes `0x50`
 * (80), `1e3`, `5.0`, ` 5 `, and an empty value as 0 (PORT= listened on a random port; `limit=`
 * was a page of 0): a client or operator sending one of those has a mistake that was hidden, and
 * another reader of the same documented `integer` would refuse it.
 */
const DECIMAL_INTEGER = /^-?[0-9]+$/;
const DECIMAL_NUMBER = /^-?[0-9]+(\.[0-9]+)?$/;

/** A number whose text is `form`; any other text is refused, saying `expected` (never the value). */
const numberIn = (form: RegExp, expected: string, bounds: (number: z.ZodNumber) => z.ZodNumber) =>
  z.preprocess(
    // Anything else stays a string, which the number schema refuses, naming the field.
    (value) => (typeof value === "string" && form.test(value) ? Number(value) : value),
    // Only the type's message is ours: the bounds keep zod's, which state them.
    bounds(z.number({ error: (issue) => (issue.code === "invalid_type" ? expected : undefined) })),
  );

/** An integer in decimal digits: at least `min` (`tooSmall` says why, if given), at most `max`. */
export const integer = (min: number, max?: number, tooSmall?: string) =>
  numberIn(DECIMAL_INTEGER, "must be an integer in decimal digits", (number) => {
    const bounded = number.int().min(min, tooSmall);
    return max === undefined ? bounded : bounded.max(max);
  });

/** A number that takes fractions (minutes, hours), in decimal digits with an optional `.fraction`. */
export const decimal = (min: number, max: number) =>
  numberIn(DECIMAL_NUMBER, "must be a number in decimal digits (such as 2 or 0.5)", (number) =>
    number.min(min).max(max),
  );
