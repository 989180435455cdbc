import { describe, expect, it } from "vitest";
import { REPLACEMENT_FEE_CAP, replacementFees } from "../../src/payments/replacement-fees.js";

const gwei = (n: number) => BigInt(n) * 1_000_000_000n;
const fees = (max: number, tip: number) => ({
  maxFeePerGas: gwei(max),
  maxPriorityFeePerGas: gwei(tip),
});

describe("a stuck transaction's replacement fees", () => {
  it("are the minimum bump nodes take (12.5%) over fees at or above the chain's current ones, not 50%", () => {
    expect(replacementFees(fees(20, 2), fees(12, 1))).toEqual({
      maxFeePerGas: 22_500_000_000n,
      maxPriorityFeePerGas: 2_250_000_000n,
    });
  });

  it("start from the chain's current fees when the chain has risen above the old ones", () => {
    expect(replacementFees(fees(10, 1), fees(40, 4))).toEqual({
      maxFeePerGas: gwei(45),
      maxPriorityFeePerGas: 4_500_000_000n,
    });
  });

  it("never pass the cap on the chain's current max fee, however often raised (the tip within the max fee)", () => {
    let sent = fees(10, 9);
    const current = fees(10, 1);
    for (let i = 0; i < 50; i++) sent = replacementFees(sent, current) ?? sent;
    expect(sent.maxFeePerGas).toBeLessThanOrEqual(current.maxFeePerGas * REPLACEMENT_FEE_CAP);
    expect(sent.maxPriorityFeePerGas).toBeLessThanOrEqual(sent.maxFeePerGas);
  });

  it("are none when the cap leaves no room for the 10% a node requires (the transaction is sent again unchanged)", () => {
    expect(replacementFees(fees(29, 1), fees(10, 1))).toBeNull();
  });

  it("raise a tip the chain has outgrown even when the old max fee (a higher base fee's) is above the cap, by the least a node takes", () => {
    expect(replacementFees(fees(100, 0), fees(30, 2))).toEqual({
      maxFeePerGas: gwei(110),
      maxPriorityFeePerGas: 2_250_000_000n,
    });
    // Raised once, its tip is the chain's: stuck again, it is sent again unchanged, not raised.
    const raised = { maxFeePerGas: gwei(110), maxPriorityFeePerGas: 2_250_000_000n };
    expect(replacementFees(raised, fees(30, 2))).toBeNull();
  });
});
