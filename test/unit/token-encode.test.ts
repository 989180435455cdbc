import { Tiktoken, type TiktokenBPE } from "js-tiktoken/lite";
import { describe, expect, it } from "vitest";
import { encodeTokens } from "../../src/workers/tools/token-encode.js";

const RANKS: Record<string, () => Promise<{ default: TiktokenBPE }>> = {
  o200k_base: () => import("js-tiktoken/ranks/o200k_base"),
  cl100k_base: () => import("js-tiktoken/ranks/cl100k_base"),
  p50k_base: () => import("js-tiktoken/ranks/p50k_base"),
  r50k_base: () => import("js-tiktoken/ranks/r50k_base"),
};

/** Texts of every kind a tokeniser splits differently, each short enough for js-tiktoken's own quadratic merge. */
function samples(): string[] {
  let seed = 7;
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
  const from = (alphabet: string, n: number) =>
    Array.from(
      { length: n },
      () => [...alphabet][Math.floor(random() * [...alphabet].length)],
    ).join("");
  return [
    "",
    "Toolgate sells tool calls for credits.",
    "a".repeat(500),
    from("abcdefghijklmnopqrstuvwxyz", 800),
    from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/=", 800),
    from("0123456789", 300),
    " ".repeat(300) + "x",
    "\n\n \t\r\n".repeat(50),
    "日本語のテキストと中文文本".repeat(20),
    "😀👍🏽🇫🇷‍👩‍👩‍👧".repeat(30),
    from("aé ñ'sÜ.,!?-_", 600),
    "don't I'LL we've they're it's".repeat(10),
    "before<|endoftext|>after<|endoftext|>",
    "Zusammenhangsbewusstseinsverschiebungskraftfahrzeughaftpflichtversicherung".repeat(8),
  ];
}

describe("counting tokens without js-tiktoken's quadratic merge", () => {
  it("gives js-tiktoken's own tokens, for every encoding and kind of text", async () => {
    for (const [name, load] of Object.entries(RANKS)) {
      const encoder = new Tiktoken((await load()).default);
      for (const text of samples())
        expect([name, text.slice(0, 20), encodeTokens(encoder, text)]).toEqual([
          name,
          text.slice(0, 20),
          encoder.encode(text, "all"),
        ]);
    }
  }, 120_000);
});
