import { describe, expect, it } from "vitest";
import { SchemaCompiler } from "../../src/tools/custom/json-schema.js";

/** A schema of its own (`n` makes it distinct) about `properties` patterned strings large. */
const schemaOf = (n: number, properties = 20) => ({
  type: "object",
  properties: Object.fromEntries(
    Array.from({ length: properties }, (_, i) => [
      `field_${n}_${i}`,
      { type: "string", pattern: `^[a-z]{${i + 1}}$` },
    ]),
  ),
});
const bytesOf = (schema: unknown) => JSON.stringify(schema).length;

describe("the compiled-schema cache (a Business account registers schemas; each validator is ~32× its JSON in heap)", () => {
  it("keeps validators up to its budget of schema bytes, dropping the least recently used", () => {
    const budget = 5 * bytesOf(schemaOf(0));
    const compiler = new SchemaCompiler(budget);
    const first = compiler.compile(schemaOf(0));
    const early = compiler.compile(schemaOf(1));
    for (let n = 2; n < 40; n++) {
      compiler.compile(schemaOf(n));
      // The first is used again and again: never the one to go.
      expect(compiler.compile(schemaOf(0))).toBe(first);
      expect(compiler.keptBytes).toBeLessThanOrEqual(budget);
    }
    // An early one not used since was dropped: compiled anew.
    expect(compiler.compile(schemaOf(1))).not.toBe(early);
    expect(compiler.keptBytes).toBeLessThanOrEqual(budget);
  });

  it("keeps nothing for a schema only checked (a registration that may yet be refused)", () => {
    const compiler = new SchemaCompiler();
    for (let n = 0; n < 50; n++) compiler.check(schemaOf(n));
    expect(compiler.keptBytes).toBe(0);
    expect(() =>
      compiler.check({ type: "object", properties: { a: { format: "emial" } } }),
    ).toThrow(/unknown format/);
  });
});
