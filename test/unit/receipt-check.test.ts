import type { Address, Hex, Log } from "viem";
import { describe, expect, it } from "vitest";
import { transferInReceipt, type ExpectedTransfer } from "../../src/payments/receipt.js";
import { authorizationUsedLog, transferLog } from "../helpers/token-logs.js";

/** Receipts made of the logs the project's EIP-3009 token emits (test/helpers/token-logs.ts). */
const TOKEN = "0x5FbDB2315678afecb367f032d93F642f64180aa3" as Address;
const PAY_TO = "0x23618e81E3f5cdF7f54C3d65f7FBc0aBf5B21E8f" as Address;
const ALICE = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" as Address;
const BOB = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC" as Address;
const nonce = (n: number) => `0x${n.toString(16).padStart(64, "0")}` as Hex;

const used = (authorizer: Address, n: Hex, token = TOKEN) =>
  authorizationUsedLog(token, authorizer, n);
const transfer = (from: Address, to: Address, value: bigint, token = TOKEN) =>
  transferLog(token, from, to, value);
const expected = (from: Address, n: Hex, value = 2000n): ExpectedTransfer => ({
  token: TOKEN,
  from,
  to: PAY_TO,
  value,
  nonce: n,
});

describe("a settlement's receipt", () => {
  it("proves a payment by its AuthorizationUsed log followed by its Transfer", () => {
    const receipt = { logs: [used(ALICE, nonce(1)), transfer(ALICE, PAY_TO, 2000n)] };
    expect(transferInReceipt(receipt, expected(ALICE, nonce(1)))).toBe(true);
  });

  it("does not prove a transfer of another amount, to another payee, or of another nonce", () => {
    const receipt = { logs: [used(ALICE, nonce(1)), transfer(ALICE, PAY_TO, 2000n)] };
    expect(transferInReceipt(receipt, expected(ALICE, nonce(1), 2001n))).toBe(false);
    expect(transferInReceipt(receipt, { ...expected(ALICE, nonce(1)), to: BOB })).toBe(false);
    expect(transferInReceipt(receipt, expected(ALICE, nonce(2)))).toBe(false);
    expect(transferInReceipt(receipt, expected(BOB, nonce(1)))).toBe(false);
  });

  it("judges each payment of a batch by its own logs: one that failed inside it has none", () => {
    // Bob's authorization failed inside the Multicall3 batch: the token emitted nothing for it.
    const receipt = {
      logs: [
        used(ALICE, nonce(1)),
        transfer(ALICE, PAY_TO, 2000n),
        used(ALICE, nonce(3)),
        transfer(ALICE, PAY_TO, 5000n),
      ],
    };
    expect(transferInReceipt(receipt, expected(ALICE, nonce(1)))).toBe(true);
    expect(transferInReceipt(receipt, expected(ALICE, nonce(3), 5000n))).toBe(true);
    // Paired by position: nonce 1's Transfer is the 2,000 one, not the 5,000 one after nonce 3.
    expect(transferInReceipt(receipt, expected(ALICE, nonce(1), 5000n))).toBe(false);
    expect(transferInReceipt(receipt, expected(BOB, nonce(2)))).toBe(false);
  });

  it("counts only the token's own logs: the same events from another contract prove nothing", () => {
    const other = "0x0000000000000000000000000000000000000bad" as Address;
    const receipt = { logs: [used(ALICE, nonce(1), other), transfer(ALICE, PAY_TO, 2000n, other)] };
    expect(transferInReceipt(receipt, expected(ALICE, nonce(1)))).toBe(false);
  });

  it("reads hex as bytes: topics and addresses in any case match", () => {
    const upper = (l: Log) =>
      ({
        ...l,
        address: l.address.toUpperCase().replace("0X", "0x"),
        topics: l.topics.map((t) => t!.toUpperCase().replace("0X", "0x")),
      }) as Log;
    const receipt = {
      logs: [upper(used(ALICE, nonce(0xab))), upper(transfer(ALICE, PAY_TO, 2000n))],
    };
    expect(transferInReceipt(receipt, expected(ALICE, nonce(0xab)))).toBe(true);
  });
});
