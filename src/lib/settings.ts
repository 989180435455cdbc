import { z } from "zod";

/**
 * How a setting's text is read, for the gateway's settings (config.ts) and the tool workers'
 * (workers/config.ts) alike.
 *
 * The text of a numeric setting: decimal digits, with a sign only to say the number is negative
 * (its bounds then refuse it), and for a setting that takes fractions, one after a point.
 * `z.coerce.number()` read it with `Number()`, which also takes `0x50` (80), `1e3`, ` 5 `, and an
 * empty value as 0 (PORT= listened on a random port); an empty value is unset now, dropped before
 * parsing (withoutBlankValues). The query integers are read the same way (http/query-integer.ts).
 */
const DECIMAL_INTEGER = /^-?[0-9]+$/;
const DECIMAL_NUMBER = /^-?[0-9]+(\.[0-9]+)?$/;

/** A number setting whose text is `form`; any other text is refused, saying `expected` (never the value). */
const numberIn = (form: RegExp, expected: string, bounds: (number: z.ZodNumber) => z.ZodNumber) =>
  z.preprocess(
    // Anything else stays a string, which the number schema refuses, naming the setting.
    (value) => (typeof value === "string" && form.test(value) ? Number(value) : value),
    // Only the type's message is ours: the bounds keep zod's, which state them.
    bounds(z.number({ error: (issue) => (issue.code === "invalid_type" ? expected : undefined) })),
  );

/** An integer setting, in decimal digits: at least `min` (`tooSmall` says why, if given), at most `max`. */
export const integer = (min: number, max?: number, tooSmall?: string) =>
  numberIn(DECIMAL_INTEGER, "must be an integer in decimal digits", (number) => {
    const bounded = number.int().min(min, tooSmall);
    return max === undefined ? bounded : bounded.max(max);
  });

/** A setting that takes fractions (minutes, hours), in decimal digits with an optional `.fraction`. */
export const decimal = (min: number, max: number) =>
  numberIn(DECIMAL_NUMBER, "must be a number in decimal digits (such as 2 or 0.5)", (number) =>
    number.min(min).max(max),
  );

/**
 * The environment as every setting is read from it: a variable that is empty or only white space
 * is unset, whatever reads it (a schema, a network's settings, TOOLS_FILE's `${NAME}`), except
 * those named in `emptyIsAValue`. An optional setting then takes its default, and a required one
 * is missing, named. docker compose passes `${VAR:-}` as an empty string for each optional setting
 * .env leaves out, and an env file's `VAR=` does the same: refused (a string) or read as 0 (a
 * number), they stopped the shipped topology or changed what it did.
 */
export function withoutBlankValues(
  env: NodeJS.ProcessEnv,
  emptyIsAValue: ReadonlySet<string> = new Set(),
): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(env).filter(
      ([name, value]) => value !== undefined && (value.trim() !== "" || emptyIsAValue.has(name)),
    ),
  );
}
