import { describe, expect, it } from "vitest";
import { normaliseHex, sameBytes } from "../../src/lib/hex.js";

describe("hex compared as bytes", () => {
  it("is the same bytes whatever the case of the digits", () => {
    expect(sameBytes("0xAbCdEF01", "0xabcdef01")).toBe(true);
    expect(sameBytes("0xabcdef01", "0xabcdef01")).toBe(true);
    expect(sameBytes("0x", "0x")).toBe(true);
  });

  it("is not the same bytes when a digit or the length differs", () => {
    expect(sameBytes("0xabcdef01", "0xabcdef02")).toBe(false);
    expect(sameBytes("0xabcdef01", "0xabcdef0100")).toBe(false);
    expect(sameBytes("0x00ab", "0xab")).toBe(false);
  });

  it("is never equal to something that is not hex, itself included", () => {
    expect(sameBytes("0xzz", "0xzz")).toBe(false);
    expect(sameBytes("abcd", "abcd")).toBe(false);
    expect(sameBytes("0xabc", "0xabc")).toBe(false); // odd length: not whole bytes
    expect(sameBytes("0Xab", "0xab")).toBe(false);
  });

  it("normalises to lower case once, and refuses what is not even-length 0x hex", () => {
    expect(normaliseHex("0xABcd")).toBe("0xabcd");
    expect(() => normaliseHex("0xabc")).toThrow(/not even-length/);
    expect(() => normaliseHex("abcd")).toThrow(/not even-length/);
  });
});
