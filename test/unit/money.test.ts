import { describe, expect, it } from "vitest";
import { atomicPrice, formatUsd, parseUsd } from "../../src/lib/money.js";
import { formatCredits, priceOf } from "../../src/tools/pricing.js";

/** Money is integers: USD amounts are USDC atomic units (6 decimals) in bigint. */
describe("USD amounts", () => {
  it.each([
    ["0.002", 2000n],
    ["1", 1_000_000n],
    ["19.00", 19_000_000n],
    ["0.000001", 1n],
    [" 2.5 ", 2_500_000n],
  ])("parses %j as %s atomic units", (text, atomic) => {
    expect(parseUsd(text)).toBe(atomic);
  });

  it.each(["0.0000001", "-1", "1e3", "", "1.", "$1", "0x10"])("refuses %j", (text) => {
    expect(() => parseUsd(text)).toThrow(/not a USD amount/);
  });

  it.each([
    [2000n, "0.002"],
    [10_000n, "0.01"],
    [0n, "0.00"],
    [19_000_000n, "19.00"],
    [1n, "0.000001"],
    [123_456_789n, "123.456789"],
  ])("formats %s atomic units as %j", (atomic, text) => {
    expect(formatUsd(atomic)).toBe(text);
    expect(parseUsd(text)).toBe(atomic);
  });
});

describe("prices", () => {
  it("is cost × the credit's price, with no floating point", () => {
    expect(atomicPrice(3, 1000n)).toBe(3000n);
    expect(priceOf({ cost: 2 }, 1000n)).toEqual({ credits: 2, usd: "0.002", usdc_atomic: "2000" });
    expect(atomicPrice(2 ** 40, 10n ** 12n)).toBe(2n ** 40n * 10n ** 12n);
  });

  it("states amounts of credits in one way", () => {
    expect(formatCredits(1)).toBe("1 credit");
    expect(formatCredits(1n)).toBe("1 credit");
    expect(formatCredits(0)).toBe("0 credits");
    expect(formatCredits(5)).toBe("5 credits");
  });
});
