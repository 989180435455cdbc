import { closestToolName } from "../agents/select.js";

/**
 * A small argument parser for the CLI: `--name value`, `--name=value`, boolean flags, and
 * positionals. Unknown `--options` are kept, so `toolgate call` can turn them into tool input
 * fields generated from the tool's schema; every other command refuses them with `expectArgs`.
 */
export class UsageError extends Error {}

export interface Parsed {
  positionals: string[];
  options: Map<string, string | true>;
}

const BOOLEAN_FLAGS = new Set(["json", "help", "h", "force"]);

/** `toolgate call`'s own options: a tool field of one of these names is given as `--field.NAME`. */
export const CALL_OPTIONS = [
  "input",
  "json",
  "base-url",
  "timeout",
  "wallet-key-file",
  "max-per-call",
  "max-per-session",
  "allow-asset",
  "idempotency-key",
  "help",
  "h",
];

/** The prefix that makes an option a tool field whatever its name: `--field.json '{"a":1}'`. */
export const FIELD_PREFIX = "field.";

/** The flag that gives a tool's field: `--NAME`, or `--field.NAME` when NAME is an option of the CLI. */
export const fieldFlag = (name: string): string =>
  CALL_OPTIONS.includes(name) ||
  BOOLEAN_FLAGS.has(name) ||
  name === API_KEY ||
  name.startsWith(FIELD_PREFIX)
    ? `--${FIELD_PREFIX}${name}`
    : `--${name}`;

export function parseArgs(argv: string[]): Parsed {
  const positionals: string[] = [];
  const options = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    const long = /^--([^=]+)(?:=(.*))?$/s.exec(arg);
    const short = /^-([a-zA-Z])$/.exec(arg);
    if (long || short) {
      const name = long ? long[1]! : short![1]!;
      // `--json=…` would otherwise be read as --json and its value lost.
      if (long?.[2] !== undefined && BOOLEAN_FLAGS.has(name))
        throw new UsageError(
          `--${name} takes no value (a tool's field named ${name} is given as --${FIELD_PREFIX}${name} VALUE)`,
        );
      if (long?.[2] !== undefined) options.set(name, long[2]);
      else if (
        BOOLEAN_FLAGS.has(name) ||
        argv[i + 1] === undefined ||
        argv[i + 1]!.startsWith("--")
      )
        options.set(name, true);
      else options.set(name, argv[++i]!);
    } else positionals.push(arg);
  }
  return { positionals, options };
}

/** Options every command takes. */
const GLOBAL_OPTIONS = ["json", "base-url", "timeout", "help", "h"];

/** Never an option: a key is read from TOOLGATE_API_KEY or the login, not an argument (shell history). */
const API_KEY = "api-key";

/**
 * Refuses what a command would otherwise silently ignore, before any request: a positional past
 * the `count` it reads (`call hash --text hello world` would hash "hello"), and an option it does
 * not take (`usage --limt 1` would list the default page), naming the closest known one. With
 * `options` undefined any option goes (`call`'s are the tool's fields, checked against its schema).
 */
export function expectArgs(parsed: Parsed, count: number, options?: string[]): void {
  const extra = parsed.positionals[count];
  if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}"`);
  // Every command, `call` too (whose other options are the tool's fields): a tool's field of
  // that name is --field.api-key.
  if (parsed.options.has(API_KEY))
    throw new UsageError(
      "unknown option --api-key: a key is never taken as an argument; set TOOLGATE_API_KEY or run `toolgate login`",
    );
  if (options === undefined) return;
  const known = [...GLOBAL_OPTIONS, ...options];
  for (const name of parsed.options.keys()) {
    if (known.includes(name)) continue;
    const guess = closestToolName(
      name,
      known.filter((k) => k.length > 1),
    );
    throw new UsageError(`unknown option --${name}${guess ? ` (did you mean --${guess}?)` : ""}`);
  }
}

/** The string value of an option, or a usage error when it was given without one. */
export function stringOption(parsed: Parsed, name: string): string | undefined {
  const value = parsed.options.get(name);
  if (value === true) throw new UsageError(`--${name} needs a value`);
  return value;
}

export function intOption(parsed: Parsed, name: string): number | undefined {
  const value = stringOption(parsed, name);
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${name} must be a whole number`);
  // Beyond 2^53 a Number is rounded: a value other than the one given.
  if (!Number.isSafeInteger(Number(value)))
    throw new UsageError(`--${name} must be at most ${Number.MAX_SAFE_INTEGER}`);
  return Number(value);
}

/** A whole number option read exactly, at any size (USDC atomic units). */
export function bigintOption(parsed: Parsed, name: string): bigint | undefined {
  const value = stringOption(parsed, name);
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${name} must be a whole number`);
  return BigInt(value);
}

/** A decimal number as JSON writes one, or with a leading "+", "." or trailing ".": 1e3, .5, +2, 5. */
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/** A field's JSON Schema, as far as the CLI reads it. */
export interface FieldSchema {
  type?: string | string[];
  anyOf?: FieldSchema[];
  oneOf?: FieldSchema[];
  enum?: unknown[];
  const?: unknown;
  description?: string;
}

const jsonTypeOf = (value: unknown): string =>
  value === null ? "null" : Array.isArray(value) ? "array" : typeof value;

/**
 * The JSON types a field takes, from its `type`, or the union of its `anyOf`/`oneOf` branches, or
 * its `enum`/`const` values; undefined when the schema does not say (any JSON value).
 */
export function fieldTypes(spec: FieldSchema): Set<string> | undefined {
  if (spec.type !== undefined) return new Set(([] as string[]).concat(spec.type));
  const branches = spec.anyOf ?? spec.oneOf;
  if (branches) {
    const types = new Set<string>();
    for (const branch of branches) {
      const some = fieldTypes(branch);
      if (some === undefined) return undefined;
      for (const t of some) types.add(t);
    }
    return types;
  }
  if (Array.isArray(spec.enum)) return new Set(spec.enum.map(jsonTypeOf));
  if ("const" in spec) return new Set([jsonTypeOf(spec.const)]);
  return undefined;
}

/** How `tools show` names a field's type: "json" for a field that takes any JSON value. */
export const fieldTypeLabel = (spec: FieldSchema): string => {
  const types = fieldTypes(spec);
  return types === undefined ? "json" : [...types].join("|");
};

const allows = (types: Set<string>, value: unknown): boolean => {
  const t = jsonTypeOf(value);
  return types.has(t) || (t === "number" && types.has("integer") && Number.isInteger(value));
};

const TYPE_WORDS: Record<string, string> = {
  object: "a JSON object",
  array: "a JSON array",
  integer: "an integer",
  number: "a number",
  boolean: "true or false",
  null: "null",
};

/**
 * Turns `--FIELD value` (or `--field.FIELD value`) options into a tool input, typed by the tool's input JSON Schema; a
 * field flag without a value is `true` for a boolean field and a usage error for any other.
 * A field that takes only strings gets the value as given. Any other field gets the value parsed
 * as JSON when it parses to a type the field takes (`--data '{"a":1}'`, `--expression '["x=2","x*3"]'`);
 * otherwise the value as a string when the field takes strings (`--expression 1+2`, a PEM
 * `--public_key`, any text for a field whose schema has no type), else a usage error.
 */
export function inputFromFlags(
  flags: Map<string, string | true>,
  schema: { properties?: Record<string, FieldSchema> },
): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  const properties = schema.properties ?? {};
  for (const [flag, raw] of flags) {
    const name = flag.startsWith(FIELD_PREFIX) ? flag.slice(FIELD_PREFIX.length) : flag;
    const field = name in properties ? name : name.replace(/-/g, "_");
    const spec = properties[field];
    if (!spec)
      throw new UsageError(
        `unknown option --${flag}; this tool takes ${
          Object.keys(properties).map(fieldFlag).join(", ") || "no fields"
        }`,
      );
    if (field in input) throw new UsageError(`--${flag} gives the field ${field} a second time`);
    const types = fieldTypes(spec);
    // A bare flag (no value, or another flag next) means true, for a boolean field only.
    if (raw === true && !types?.has("boolean")) throw new UsageError(`--${flag} needs a value`);
    const value = raw === true ? "true" : raw;
    if (types?.has("boolean") && (value === "true" || value === "false"))
      input[field] = value === "true";
    else if (
      (types?.has("integer") || types?.has("number")) &&
      DECIMAL.test(value) &&
      Number.isFinite(Number(value))
    )
      input[field] = Number(value);
    else if (types !== undefined && [...types].every((t) => t === "string")) input[field] = value;
    else {
      let parsed: { value: unknown } | undefined;
      try {
        parsed = { value: JSON.parse(value) };
      } catch {}
      // 1e999 parses to Infinity, which JSON would send as null: not a number a field takes.
      if (typeof parsed?.value === "number" && !Number.isFinite(parsed.value)) parsed = undefined;
      if (parsed && (types === undefined || allows(types, parsed.value)))
        input[field] = parsed.value;
      else if (types === undefined || types.has("string")) input[field] = value;
      else
        throw new UsageError(
          `--${flag} must be ${[...types].map((t) => TYPE_WORDS[t] ?? t).join(" or ")}`,
        );
    }
  }
  return input;
}
