/**
 * Waiting for a settlement transaction's receipt: at once, a few quick looks, then block by block
 * (viem), always within the receipt timeout. Shared by settlement and the paid-call bench's
 * chain-only baseline, so both read a receipt the same way.
 */
import {
  TransactionReceiptNotFoundError,
  type Hex,
  type PublicClient,
  type TransactionReceipt,
} from "viem";

/**
 * Quick looks for a receipt right after the send, before waiting block by block: a chain that
 * mines on arrival (anvil's automine, a sequencer's preconfirmation) has it a few milliseconds
 * later, and viem's block-driven wait would first sleep a whole polling interval. Their sum stays
 * under the default polling interval, so a chain with real block times pays at most these few
 * extra reads (per transaction: a batch shares them) before the usual wait.
 */
export const QUICK_RECEIPT_DELAYS_MS = [2, 5, 10, 20, 40];

/** The receipt of `hash`: looked for at once, then after each quick delay, then on each new block, within `receiptTimeoutMs`. */
export async function awaitReceipt(
  client: PublicClient,
  hash: Hex,
  options: { receiptTimeoutMs: number },
): Promise<TransactionReceipt> {
  const deadline = Date.now() + options.receiptTimeoutMs;
  for (const delay of [0, ...QUICK_RECEIPT_DELAYS_MS]) {
    if (delay) await new Promise((r) => setTimeout(r, delay));
    let timer: NodeJS.Timeout | undefined;
    const look = await Promise.race([
      client.getTransactionReceipt({ hash }).then(
        (receipt) => receipt,
        // Not there yet: look again. An RPC that failed is left to the wait below.
        (err: unknown) => (err instanceof TransactionReceiptNotFoundError ? null : "failed"),
      ),
      // The receipt wait stays bounded however slowly the RPC answers.
      new Promise<"late">((r) => (timer = setTimeout(() => r("late"), deadline - Date.now()))),
    ]).finally(() => clearTimeout(timer));
    if (look === "late") throw new Error("no receipt in time");
    if (look === "failed") break;
    if (look) return look;
  }
  return client.waitForTransactionReceipt({
    hash,
    timeout: Math.max(1, deadline - Date.now()),
    retryCount: 0,
    // Our own transactions are replaced only by the reconciler, which tracks them itself.
    checkReplacement: false,
  });
}
