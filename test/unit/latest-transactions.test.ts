import { describe, expect, it } from "vitest";
import { latestTransactions } from "../../src/payments/reconciler.js";
import type { PaymentRecord, RelayedTransaction } from "../../src/store/types.js";

/**
 * A batch's payments share one transaction; the reconciler replaces it once for all of them. A
 * payment whose record still names an earlier sending follows the latest one (the highest fees)
 * of the same transaction, never one that carries other authorizations.
 */
const RELAYER = "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720";
const relay = (over: Partial<RelayedTransaction> = {}): RelayedTransaction => ({
  from: RELAYER,
  nonce: 7,
  gas: "100000",
  maxFeePerGas: "1000",
  maxPriorityFeePerGas: "10",
  data: "0xbatch",
  sentAt: 1,
  ...over,
});
const pending = (txHash: string, r: RelayedTransaction | null) =>
  ({ state: "pending", txHash, relay: r }) as PaymentRecord;
const key = (r: RelayedTransaction) => `${r.from!.toLowerCase()}:${r.nonce}:${r.data}`;

describe("the latest sending of a payment transaction", () => {
  it("is the one with the highest fees, whichever record names it first", () => {
    const first = relay();
    const replaced = relay({ maxFeePerGas: "1500", sentAt: 2 });
    for (const order of [
      [pending("0x01", first), pending("0x02", replaced), pending("0x01", first)],
      [pending("0x02", replaced), pending("0x01", first)],
    ]) {
      const latest = latestTransactions(order);
      expect(latest.size).toBe(1);
      expect(latest.get(key(first))).toEqual({ hash: "0x02", relay: replaced });
    }
  });

  it("is the same transaction whatever the case of its relayer's address", () => {
    const latest = latestTransactions([
      pending("0x01", relay()),
      pending("0x02", relay({ from: RELAYER.toLowerCase(), maxFeePerGas: "1500" })),
    ]);
    expect([...latest.values()].map((s) => s.hash)).toEqual(["0x02"]);
  });

  it("is kept apart for another transaction at the same nonce, or the same calldata at another nonce", () => {
    const latest = latestTransactions([
      pending("0x01", relay()),
      pending("0x02", relay({ data: "0xother", maxFeePerGas: "9000" })),
      pending("0x03", relay({ nonce: 8, maxFeePerGas: "9000" })),
    ]);
    expect(latest.get(key(relay()))?.hash).toBe("0x01");
    expect(latest.size).toBe(3);
  });

  it("is known only for payments whose transaction was sent", () => {
    expect(
      latestTransactions([pending("0x01", null), { state: "settling" } as PaymentRecord]).size,
    ).toBe(0);
  });
});
