import { describe, expect, it } from "vitest";
import { mendWindows1252 } from "../../src/workers/web/windows-1252.js";

describe("windows-1252's 0x80-0x9F", () => {
  it("are read as the WHATWG index has them, its five unmapped bytes left as they are", () => {
    const bytes = Uint8Array.from({ length: 32 }, (_, i) => 0x80 + i);
    expect(mendWindows1252(new TextDecoder("windows-1252").decode(bytes))).toBe(
      "€\u0081‚ƒ„…†‡ˆ‰Š‹Œ\u008DŽ\u008F\u0090‘’“”•–—˜™š›œ\u009DžŸ",
    );
  });

  it("leave a text without them as it is, and a mended text mends to itself", () => {
    const text = "Café crème ÿ";
    expect(mendWindows1252(text)).toBe(text);
    expect(mendWindows1252("€ “x” \u0081")).toBe("€ “x” \u0081");
  });
});
