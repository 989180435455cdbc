import { describe, expect, it } from "vitest";
import { toolNotFound } from "../../src/tools/lookup.js";

/** The near miss a `tool_not_found` names: tool names are matched exactly, so letter case is a miss too. */
describe("toolNotFound's guess", () => {
  const guessIn = (name: string) =>
    /\(did you mean ([^?]+)\?\)/.exec(toolNotFound(name).message)?.[1];

  it("is the name in its own letter case when only the case is wrong", () => {
    expect(guessIn("HASH")).toBe("hash");
    expect(guessIn("Unit-Convert")).toBe("unit-convert");
  });

  it("is still the nearest name for a misspelling, and never the name itself", () => {
    expect(guessIn("hsah")).toBe("hash");
    // (A tool the caller may not see is not found as written: its own name is no guess.)
    expect(guessIn("hash")).not.toBe("hash");
  });
});
