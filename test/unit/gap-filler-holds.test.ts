import type { Address } from "viem";
import { describe, expect, it } from "vitest";
import { mayHoldNonce } from "../../src/payments/reconciler.js";
import type { PaymentRecord } from "../../src/store/types.js";

/**
 * The reconciler fills a relayer's nonce gap with a self-transfer only where no payment may be
 * waiting: a filler at higher fees would displace that payment's own transaction.
 */
const RELAYER = "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720" as Address;
const OTHER = "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955" as Address;
const DEADLINE_MS = 60_000;
const T = 1_000_000;

const record = (over: Partial<PaymentRecord>): PaymentRecord =>
  ({ network: "base-sepolia", state: "settling", createdAt: T - 5_000, ...over }) as PaymentRecord;
const relay = (from: string, nonce: number) => ({
  from,
  nonce,
  gas: "1",
  maxFeePerGas: "1",
  maxPriorityFeePerGas: "1",
  data: "0x",
  sentAt: T,
});
const at = (over: Partial<Parameters<typeof mayHoldNonce>[1]> = {}) => ({
  network: "base-sepolia",
  relayer: RELAYER,
  nonce: 7,
  since: T,
  now: T + 2_000,
  settlingDeadlineMs: DEADLINE_MS,
  // The pool's account of a relay's `from` (any case) is the relayer's checksummed address.
  relayerOf: (from: string | undefined) =>
    [RELAYER, OTHER].find((a) => a.toLowerCase() === from?.toLowerCase()),
  ...over,
});

describe("a payment that may hold a relayer's nonce", () => {
  it("is one whose transaction is at that relayer and nonce (its address in any case)", () => {
    const p = record({ state: "pending", relay: relay(RELAYER.toLowerCase(), 7) });
    expect(mayHoldNonce(p, at())).toBe(true);
    expect(mayHoldNonce(p, at({ nonce: 8 }))).toBe(false);
    expect(mayHoldNonce(p, at({ relayer: OTHER }))).toBe(false);
    expect(mayHoldNonce(p, at({ network: "polygon-amoy" }))).toBe(false);
  });

  it("is one still being settled that began before the chain was seen stuck at the nonce", () => {
    // Its record does not know its transaction yet: it may be the one waiting there.
    expect(mayHoldNonce(record({}), at())).toBe(true);
    expect(mayHoldNonce(record({}), at({ relayer: OTHER }))).toBe(true);
  });

  it("is not one begun after the chain was seen stuck: it cannot have taken that nonce", () => {
    expect(mayHoldNonce(record({ createdAt: T + 1 }), at())).toBe(false);
  });

  it("is not one still marked settling past its settling deadline (its process died)", () => {
    expect(mayHoldNonce(record({}), at({ now: T - 5_000 + DEADLINE_MS }))).toBe(false);
  });
});
