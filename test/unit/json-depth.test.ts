import { describe, expect, it } from "vitest";
import { jsonDepthExceeds } from "../../src/http/json-body.js";

const exceeds = (text: string, max: number) => jsonDepthExceeds(Buffer.from(text, "utf8"), max);

describe("the JSON depth scan at the door", () => {
  it("counts nested arrays and objects", () => {
    expect(exceeds('{"a":[{"b":[1]}]}', 4)).toBe(false);
    expect(exceeds('{"a":[{"b":[1]}]}', 3)).toBe(true);
    expect(exceeds("[[],[],[[]]]", 3)).toBe(false);
    expect(exceeds("[[],[],[[]]]", 2)).toBe(true);
  });

  it("does not count brackets inside strings, escaped quotes and backslashes included", () => {
    expect(exceeds('["[[[[[[", "{{{{"]', 1)).toBe(false);
    expect(exceeds('{"a\\"[[[[": 1}', 1)).toBe(false);
    expect(exceeds('{"a\\\\": [[1]]}', 2)).toBe(true);
    expect(exceeds('{"a\\\\": [[1]]}', 3)).toBe(false);
    expect(exceeds('{"é[ü\\u005b": "日本[[["}', 1)).toBe(false);
  });

  it("stops at the first level past the limit (a megabyte of [ is not read to its end)", () => {
    expect(exceeds("[".repeat(1_000_000), 64)).toBe(true);
  });
});
