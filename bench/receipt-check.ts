/**
 * The settlement's receipt check (src/payments/receipt.ts) against the way it was written before:
 * viem's `parseEventLogs` decoding every log of the receipt against the token's ABI for each
 * payment checked. Each payment of a Multicall3 batch is checked against the whole receipt, so
 * the cost per payment grows with the batch. `npm run bench:receipt-check`.
 */
import { isAddressEqual, parseEventLogs, type Address, type Hex, type Log } from "viem";
import { sameBytes } from "../src/lib/hex.js";
import { transferInReceipt, type ExpectedTransfer } from "../src/payments/receipt.js";
import { tokenAbi } from "../src/payments/verify.js";
import { authorizationUsedLog, transferLog } from "../test/helpers/token-logs.js";

const TOKEN = "0x5FbDB2315678afecb367f032d93F642f64180aa3" as Address;
const PAY_TO = "0x23618e81E3f5cdF7f54C3d65f7FBc0aBf5B21E8f" as Address;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 200);

/** The baseline: decode with the ABI, then pair AuthorizationUsed with the Transfer after it. */
function decodedCheck(receipt: { logs: Log[] }, expected: ExpectedTransfer): boolean {
  const events = parseEventLogs({
    abi: tokenAbi,
    logs: receipt.logs.filter((l) => isAddressEqual(l.address, expected.token)),
  }) as unknown as { eventName: string; args: Record<string, unknown> }[];
  const used = events.findIndex(
    (e) =>
      e.eventName === "AuthorizationUsed" &&
      isAddressEqual(e.args.authorizer as Address, expected.from) &&
      sameBytes(e.args.nonce as Hex, expected.nonce),
  );
  const transfer = used < 0 ? undefined : events[used + 1];
  return (
    transfer?.eventName === "Transfer" &&
    isAddressEqual(transfer.args.from as Address, expected.from) &&
    isAddressEqual(transfer.args.to as Address, expected.to) &&
    transfer.args.value === expected.value
  );
}

/** A batch's receipt as the token writes it: AuthorizationUsed then Transfer, per payment. */
function batch(size: number): { logs: Log[]; payments: ExpectedTransfer[] } {
  const payments = Array.from({ length: size }, (_, i) => ({
    token: TOKEN,
    from: `0x${(i + 1).toString(16).padStart(40, "0")}` as Address,
    to: PAY_TO,
    value: 2000n,
    nonce: `0x${(i + 7).toString(16).padStart(64, "0")}` as Hex,
  }));
  const logs = payments.flatMap((p) => [
    authorizationUsedLog(p.token, p.from, p.nonce),
    transferLog(p.token, p.from, p.to, p.value),
  ]);
  return { logs, payments };
}

/** µs per payment checked, every payment of the batch checked against its receipt, ROUNDS times. */
function measure(check: typeof transferInReceipt, size: number): number {
  const { logs, payments } = batch(size);
  const started = performance.now();
  for (let r = 0; r < ROUNDS; r++)
    for (const p of payments) if (!check({ logs }, p)) throw new Error("a payment not found");
  return ((performance.now() - started) * 1000) / (ROUNDS * size);
}

console.log("receipt check, µs per payment (every payment of a batch checked against its receipt)");
console.log("  batch    decoded (before)    by topics (now)    ratio");
for (const size of [1, 8, 32]) {
  measure(decodedCheck, size); // warm both up first
  measure(transferInReceipt, size);
  const before = measure(decodedCheck, size);
  const now = measure(transferInReceipt, size);
  console.log(
    `  ${String(size).padStart(5)}  ${before.toFixed(1).padStart(18)}  ${now.toFixed(1).padStart(17)}  ${(now / before).toFixed(3).padStart(7)}`,
  );
}
