import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { SchemaCompiler } from "../../src/tools/custom/json-schema.js";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** Garbage collected once the current job is over (a WeakRef holds its target until then). */
async function collected(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  gc();
}

/** A schema of its own (`n` makes it distinct): a patterned, formatted property and a bound. */
const schemaOf = (n: number) => ({
  type: "object",
  properties: {
    [`field_${n}`]: { type: "string", pattern: `^a${n}$`, format: "email" },
    count: { type: "integer", minimum: n },
  },
  required: [`field_${n}`],
});
const bytesOf = (schema: unknown) => JSON.stringify(schema).length;

/**
 * The compiler's cache bounds what it keeps by schema bytes; what Ajv kept besides was unbounded:
 * one shared Ajv instance gained scope values for every schema it compiled (the schema, its
 * validator's environment), and removeSchema never dropped them, so every distinct schema cost
 * 5–16 KB of heap for as long as the process ran, a checked-only one too.
 */
describe("the schema compiler's memory", () => {
  // First in the file: the heap it measures is not yet churned by the other test's thousand validators.
  it("keeps no memory for schemas only checked", async () => {
    const compiler = new SchemaCompiler();
    // Warmed up first: the heap settles only after the first compiles (V8's code, Ajv's modules).
    for (let n = 0; n < 1_000; n++) compiler.check(schemaOf(1_000_000 + n));
    await collected();
    const before = process.memoryUsage().heapUsed;
    for (let n = 0; n < 1_500; n++) compiler.check(schemaOf(n));
    await collected();
    const grown = process.memoryUsage().heapUsed - before;
    // 5 KB or more each (7.5 MB) when Ajv kept them; a few hundred kilobytes of noise otherwise.
    expect(grown).toBeLessThan(2 * 1024 * 1024);
  });

  it("lets a validator dropped from its cache be garbage collected", async () => {
    const compiler = new SchemaCompiler(10 * bytesOf(schemaOf(10_000)));
    const validators: WeakRef<object>[] = [];
    for (let n = 0; n < 1_000; n++) validators.push(new WeakRef(compiler.compile(schemaOf(n))));
    await collected();
    const alive = validators.filter((ref) => ref.deref() !== undefined).length;
    // The ten or so in the cache, not the thousand compiled.
    expect(alive).toBeLessThanOrEqual(12);
  });
});
