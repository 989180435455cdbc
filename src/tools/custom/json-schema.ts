import { createHash } from "node:crypto";
import type { ErrorObject, ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import { RE2JS } from "re2js";
import { z } from "zod";
import { validated, withFormats } from "../../workers/json-schema.js";
import { checkSchemaCost, SchemaCostError } from "./schema-cost.js";

/**
 * JSON Schemas written by someone else — a Business account's custom tool, an operator's
 * TOOLS_FILE entry — compiled with Ajv once and cached by their content, and bounded in size and
 * depth before Ajv sees them. Their `pattern`s run on RE2 (re2js, linear time), so a
 * catastrophic regular expression in a schema cannot stall the gateway that validates with it.
 */
export const MAX_SCHEMA_BYTES = 32 * 1024;
export const MAX_SCHEMA_DEPTH = 16;

export class SchemaError extends Error {}

/**
 * Ajv's hook for every `pattern` and `patternProperties`: RE2 semantics (no backreferences or
 * lookaround). Ajv keys its compiled patterns by `toString()`, so the object must say its pattern.
 */
const re2: ((pattern: string) => { test: (s: string) => boolean }) & { code: string } =
  Object.assign(
    (pattern: string) => {
      const compiled = RE2JS.compile(pattern);
      return { test: (s: string) => compiled.test(s), toString: () => `re2:${pattern}` };
    },
    { code: "re2js" },
  );

function depthOf(value: unknown): number {
  // Iterative: the bound is checked without recursing on a structure someone else chose.
  let max = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== "object") continue;
    max = Math.max(max, depth);
    if (max > MAX_SCHEMA_DEPTH) return max;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return max;
}

/**
 * What validating one call may cost, in the keyword entries schema-cost.ts counts: each value of
 * the input (or of an endpoint's answer) times the most its schema checks at one value. About 0.1 µs
 * each measured (anyOf branches that fail, the dearest), so at most a few tenths of a second.
 */
export const MAX_CHECKS_PER_CALL = 2_000_000;
const costs = new WeakMap<ValidateFunction, number>();

/**
 * Whether `value` is small enough for `validate` (a compiled validator): its values (and the
 * kilobytes of its strings) times the schema's checks per value stay within MAX_CHECKS_PER_CALL.
 * Counted without recursion, stopping as soon as the budget is spent.
 */
export function affordable(validate: ValidateFunction, value: unknown): boolean {
  const perValue = costs.get(validate) ?? 1;
  let left = Math.floor(MAX_CHECKS_PER_CALL / perValue);
  const stack: unknown[] = [value];
  while (stack.length) {
    const node = stack.pop();
    left -= typeof node === "string" ? 1 + (node.length >> 10) : 1;
    if (left < 0) return false;
    if (node !== null && typeof node === "object") {
      // A key is a value too (propertyNames, patternProperties check it).
      if (!Array.isArray(node)) left -= Object.keys(node).length;
      for (const child of Object.values(node)) stack.push(child);
    }
  }
  return true;
}

/** Ajv's warning for a `format` it has no check for (ajv/dist/vocabularies/format/format.js). */
const UNKNOWN_FORMAT = /^unknown format "(.*)" ignored in schema at path "(.*)"$/s;

/**
 * How much schema text the compiler keeps validators for: a validator takes ~32 times its
 * schema's JSON in heap (a 27 KB schema of 400 patterned properties: ~864 KB), so 4 MiB of
 * schemas is ~128 MB at most. Counted in entries alone (5,000), up to 4 GB could be kept, the
 * whole heap, and a Business account could get there by registering schemas.
 */
const CACHED_SCHEMA_BYTES = 4 * 1024 * 1024;

/**
 * An Ajv instance as the compiler uses it. Its logger keeps Ajv's warnings in `warnings`: by
 * default it writes to the console, lines of someone else's text (a format's name, compiled code)
 * on the gateway's stderr, outside its log; an unknown format refuses the schema instead.
 * `validateSchema: false` for an instance that compiles a schema already checked against the
 * meta-schema.
 */
function newAjv(warnings: string[], validateSchema: boolean): Ajv2020 {
  return withFormats(
    new Ajv2020({
      strict: false,
      allErrors: false,
      validateSchema,
      code: { regExp: re2 },
      logger: {
        log: () => {},
        warn: (...args) => warnings.push(args.join(" ")),
        error: () => {},
      },
    }),
  );
}

/**
 * Compiles schemas once per content (a registered tool is called many times; its schema rarely
 * changes), keeping the validators of the schemas used most recently, up to `maxCachedBytes` of
 * their JSON.
 */
export class SchemaCompiler {
  /**
   * Checks each schema against the draft 2020-12 meta-schema before it is compiled. It only ever
   * validates (the meta-schema, compiled once, is all it holds), so it stays the same size however
   * many schemas it checks; compiling the meta-schema in every schema's own instance would cost
   * ~8 ms a schema.
   */
  private readonly metaSchema = newAjv([], true);
  /** Validators by their schema's hash, least recently used first, with their schema's size. */
  private readonly cache = new Map<string, { validate: ValidateFunction; bytes: number }>();
  private cachedBytes = 0;

  constructor(private readonly maxCachedBytes = CACHED_SCHEMA_BYTES) {}

  /** The bytes of schema JSON whose validators are kept (at most `maxCachedBytes`). */
  get keptBytes(): number {
    return this.cachedBytes;
  }

  /**
   * Whether `schema` compiles, as `compile` says (SchemaError), without keeping its validator: a
   * registration that may yet be refused (its URL, its name) must not fill the cache.
   */
  check(schema: unknown): void {
    this.compile(schema, false);
  }

  /** The validator of `schema`, or SchemaError saying why it cannot be one. */
  compile(schema: unknown, keep = true): ValidateFunction {
    if (schema === null || typeof schema !== "object" || Array.isArray(schema))
      throw new SchemaError("must be a JSON Schema object");
    const text = JSON.stringify(schema);
    if (Buffer.byteLength(text) > MAX_SCHEMA_BYTES)
      throw new SchemaError(`must be at most ${MAX_SCHEMA_BYTES} bytes as JSON`);
    if (depthOf(schema) > MAX_SCHEMA_DEPTH)
      throw new SchemaError(`must nest at most ${MAX_SCHEMA_DEPTH} levels deep`);
    const id = createHash("sha256").update(text).digest("hex");
    const cached = this.cache.get(id);
    if (cached) {
      // Used again: the most recent now, the last to go.
      this.cache.delete(id);
      this.cache.set(id, cached);
      return cached.validate;
    }
    let validate: ValidateFunction;
    // Compiled without `$id`s, as they always were (they collided across accounts when every
    // schema shared one Ajv instance): a stored tool's schema means what it meant when registered.
    const own = withoutIds(schema as Record<string, unknown>);
    // Ajv validates in the event loop, without a time limit: what one input may cost is bounded
    // here, once, rather than found out on a call (schema-cost.ts). Before compiling, which can
    // itself take hundreds of milliseconds on a schema the walk refuses.
    let cost: number;
    try {
      cost = checkSchemaCost(own);
    } catch (err) {
      if (err instanceof SchemaCostError)
        throw new SchemaError(`costs too much to check: ${err.message}`);
      throw err;
    }
    // Each schema in an Ajv instance of its own, dropped with its validator: an instance keeps
    // what it compiled (the schema, the validator's environment) in its scope for as long as it
    // lives, removeSchema or not, so one shared instance grew by 5–16 KB with every distinct schema.
    const warnings: string[] = [];
    const ajv = newAjv(warnings, false);
    try {
      this.metaSchema.validateSchema(own, true);
      validate = ajv.compile(own);
    } catch (err) {
      throw new SchemaError(`is not a valid JSON Schema: ${(err as Error).message}`);
    }
    // Ajv (strict: false, which lets `x-…`, `example` and the like through) skips a `format` it does
    // not know with a warning: a schema's author expects the format checked, and it never would be.
    const unknownFormat = warnings.map((w) => UNKNOWN_FORMAT.exec(w)).find(Boolean);
    if (unknownFormat)
      throw new SchemaError(
        `uses the unknown format ${JSON.stringify(unknownFormat[1]!.slice(0, 100))} at ${JSON.stringify(unknownFormat[2]!.slice(0, 200))}; known formats: ${Object.keys(ajv.formats).join(", ")}`,
      );
    // A `$ref` cycle that consumes nothing (`{"$ref": "#"}`) compiles, then recurses until the
    // stack overflows on every value: refused here, as far as plain values show it.
    for (const sample of [{}, [], null, "", 0]) {
      if (validated(validate, sample) === "endless")
        throw new SchemaError(
          "refers to itself without end (a $ref cycle that never reaches a value)",
        );
    }
    costs.set(validate, cost);
    if (keep) this.keep(id, validate, text.length);
    return validate;
  }

  private keep(id: string, validate: ValidateFunction, bytes: number): void {
    this.cache.set(id, { validate, bytes });
    this.cachedBytes += bytes;
    for (const [oldest, { bytes: size }] of this.cache) {
      if (this.cachedBytes <= this.maxCachedBytes) break;
      this.cache.delete(oldest);
      this.cachedBytes -= size;
    }
  }

  /**
   * A zod schema that accepts what `schema` accepts, so a tool defined by JSON Schema goes
   * through the invocation service's validation unchanged: its first error becomes the 422's
   * message and `param` (a dotted path, as for every other tool).
   */
  zodOf(schema: unknown): z.ZodType {
    const validate = this.compile(schema);
    return z.unknown().superRefine((value, ctx) => {
      if (!affordable(validate, value)) {
        ctx.addIssue({
          code: "custom",
          path: [],
          message: `The input has too many values for this tool's input schema (at most ${MAX_CHECKS_PER_CALL} schema checks per call).`,
        });
        return;
      }
      const valid = validated(validate, value);
      if (valid === "endless") {
        // A cycle only some values reach (compile's samples did not): the schema's fault, told as such.
        ctx.addIssue({
          code: "custom",
          path: [],
          message: "The tool's input schema refers to itself without end for this input.",
        });
        return;
      }
      if (valid) return;
      const error = validate.errors![0]!;
      ctx.addIssue({
        code: "custom",
        path: pathOf(error),
        message: error.message ?? "does not match the input schema",
      });
    });
  }
}

/**
 * The schemas of a stored tool whose own no longer compile under the rules registration applies
 * (a rule added since it was stored): every input and every answer refused with `message`, so the
 * tool stays listed and deletable while no call runs the schema.
 */
export function refusingSchemas(message: string): {
  input: z.ZodType;
  output: z.ZodType;
  validateOutput: ValidateFunction;
} {
  const refuse = z.unknown().superRefine((_value, ctx) => {
    ctx.addIssue({ code: "custom", path: [], message });
  });
  const validateOutput = Object.assign(() => false, {
    errors: [{ instancePath: "", message }],
  }) as unknown as ValidateFunction;
  return { input: refuse, output: refuse, validateOutput };
}

/** Ajv's `/a/0/b` instance path (plus the missing property, for `required`) as zod's path. */
function pathOf(error: ErrorObject): (string | number)[] {
  const path = error.instancePath
    .split("/")
    .slice(1)
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"));
  if (error.keyword === "required")
    path.push(String((error.params as { missingProperty: string }).missingProperty));
  if (error.keyword === "additionalProperties")
    path.push(String((error.params as { additionalProperty: string }).additionalProperty));
  return path;
}

/** The schema without `$id`s, and without a top-level `$schema` (every schema is read as draft 2020-12). */
function withoutIds(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _, ...copy } = JSON.parse(JSON.stringify(schema), (key, value) =>
    key === "$id" && typeof value === "string" ? undefined : value,
  ) as Record<string, unknown>;
  return copy;
}
