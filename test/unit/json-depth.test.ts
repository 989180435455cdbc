import { describe, expect, it } from "vitest";
import { jsonDepthExceeds, loneSurrogateIn } from "../../src/http/json-body.js";

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

describe("lone surrogates in a parsed body", () => {
  const lone = (text: string) => loneSurrogateIn(JSON.parse(text), 32);
  const at = (unit: number, param: string) => ({ unit, param });
  it("finds one in a string or a key, at any depth, alone or out of order", () => {
    expect(lone(String.raw`"\ud800"`)).toEqual(at(0xd800, ""));
    expect(lone(String.raw`{"a":[1,{"b":"x\udfff"}]}`)).toEqual(at(0xdfff, "a.1.b"));
    expect(lone(String.raw`{"\udbff":1}`)).toEqual(at(0xdbff, "\udbff"));
    expect(lone(String.raw`["\udc00\ud800"]`)).toEqual(at(0xdc00, "0"));
    expect(lone(String.raw`{"a":["ok","\ud83d\ude00x\ud83d"]}`)).toEqual(at(0xd83d, "a.1"));
  });

  it("passes pairs, other escapes and values that are not strings", () => {
    expect(lone(String.raw`{"a":["\ud83d\ude00","\u00e9\\ud800",1,true,null]}`)).toBeNull();
  });
});
