import { describe, expect, it, vi } from "vitest";
import type { ToolContext } from "../../src/workers/tools/implementation.js";
import { jsonSchemaValidate } from "../../src/workers/tools/utilities.js";

/**
 * Ajv's default logger is the console: a schema's unknown format became a raw line on the
 * workers' stderr (a caller's text, line breaks and all), outside their JSON log.
 */
describe("a caller's JSON Schema in the workers", () => {
  it("writes nothing to the console for a format json-schema-validate does not know, which it still skips", async () => {
    const spies = (["log", "warn", "error"] as const).map((m) => vi.spyOn(console, m));
    try {
      for (const $schema of [undefined, "http://json-schema.org/draft-07/schema#"]) {
        const schema = {
          $schema,
          type: "object",
          properties: { a: { format: "foo\nFAKE LOG LINE" } },
        };
        expect(
          await jsonSchemaValidate.run({ schema, data: { a: "x" } } as never, {} as ToolContext),
        ).toEqual({ valid: true, errors: [] });
      }
      for (const spy of spies) expect(spy).not.toHaveBeenCalled();
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });
});
