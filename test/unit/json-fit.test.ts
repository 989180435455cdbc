import { describe, expect, it } from "vitest";
import { jsonFit, jsonStringBytes } from "../../src/workers/heavy/json-fit.js";

/** A heavy tool's output is weighed before JSON.stringify, which a thread cannot survive running out of heap in. */
describe("weighing an output before it is written as JSON", () => {
  it("stays close to JSON.stringify's length for ordinary outputs", () => {
    const output = {
      rows: [{ name: "North", units: 120, ok: true, at: null }],
      text: "x".repeat(1000),
    };
    const written = JSON.stringify(output).length;
    expect(jsonFit(output, written * 1.5)).toBe("ok");
    expect(jsonFit(output, written / 2)).toBe("over");
  });

  it("counts a string as JSON writes it in the heap: control characters six times, the whole twice once one is beyond Latin-1", () => {
    const control = "\u0001".repeat(1000);
    expect(jsonStringBytes(control)).toBe(JSON.stringify(control).length);
    expect(jsonStringBytes(`€${control}`)).toBe(2 * JSON.stringify(`€${control}`).length);
    expect(jsonStringBytes('say "hi" \\ bye')).toBe(JSON.stringify('say "hi" \\ bye').length);
    expect(jsonFit({ text: control }, 2000)).toBe("over");
  });

  it("counts a byte array as JSON writes it (a key per byte), without walking its bytes", () => {
    expect(jsonFit({ blob: new Uint8Array(30_000_000) }, 64 * 1024 * 1024)).toBe("over");
    expect(jsonFit({ blob: new Uint8Array(1000) }, 64 * 1024 * 1024)).toBe("ok");
  });

  it("finds a cycle, and tells it from a value shared twice (which JSON writes twice)", () => {
    const a: unknown[] = [];
    a.push(a);
    expect(jsonFit({ a }, Number.POSITIVE_INFINITY)).toBe("cycle");
    const shared = { x: 1 };
    expect(jsonFit([shared, shared, { again: shared }], Number.POSITIVE_INFINITY)).toBe("ok");
  });

  it("walks nesting deeper than the call stack allows", () => {
    let deep: unknown = 0;
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(jsonFit(deep, Number.POSITIVE_INFINITY)).toBe("ok");
  });
});
