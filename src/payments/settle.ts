import { encodeFunctionData, isAddressEqual, parseEventLogs, type Address, type Hex } from "viem";
import { sameBytes } from "../lib/hex.js";
import type { RelayedTransaction } from "../store/types.js";
import { NotSent, SendRefused, SendUnknown, type Relayers, type SeenBlock } from "./relayers.js";
import { authorizationMessage, authorizationUsed, tokenAbi, transferArgs } from "./verify.js";
import type { Authorization } from "./wire.js";

/**
 * Submits the authorization through the relayer pool and reads the outcome from the receipt's
 * logs: credited only when a Transfer(from → payTo, value) and the AuthorizationUsed of this
 * nonce are there. An outcome that cannot be known in time (no receipt, an RPC that stopped
 * answering after the send) is `pending`: never a failure, since the money may have moved.
 * `unsent`: nothing was broadcast because a read or the store failed first (ours to report, 503).
 */
export type Settlement =
  | { state: "settled"; txHash: Hex; blockNumber: bigint }
  | { state: "failed"; reason: string; txHash?: Hex }
  | { state: "unsent"; reason: string }
  | { state: "pending"; reason: string; txHash?: Hex; relay?: RelayedTransaction };

/**
 * `block` is the block the verification read: its base fee prices the send, so settling asks
 * the chain for nothing but the send itself and the receipt.
 */
export async function settle(
  relayers: Relayers,
  auth: Authorization,
  signature: Hex,
  payTo: Address,
  receiptTimeoutMs: number,
  block: SeenBlock,
): Promise<Settlement> {
  const clients = relayers.clients;
  const message = authorizationMessage(auth);
  const data = encodeFunctionData({
    abi: tokenAbi,
    functionName: "transferWithAuthorization",
    args: transferArgs(message, signature) as never,
  });
  // The (v, r, s) form always has the same shape and cost; a wallet's bytes signature may not.
  const shape = signature.length === 132 ? `${clients.network.usdc.address}:vrs` : null;
  const alreadyUsed = () => authorizationUsed(clients, message.from, message.nonce);
  let txHash: Hex;
  let relay: RelayedTransaction;
  try {
    ({ hash: txHash, relay } = await relayers.send(data, shape, block, alreadyUsed));
  } catch (err) {
    if (err instanceof SendRefused) return { state: "failed", reason: err.reason };
    if (err instanceof NotSent) return { state: "unsent", reason: err.message };
    // A timeout or a lost connection may have sent it.
    if (err instanceof SendUnknown)
      return { state: "pending", reason: err.reason, relay: err.relay };
    return { state: "pending", reason: (err as Error).message };
  }
  let receipt;
  try {
    receipt = await clients.public.waitForTransactionReceipt({
      hash: txHash,
      timeout: receiptTimeoutMs,
      retryCount: 0,
    });
  } catch {
    return { state: "pending", reason: "no receipt in time", txHash, relay };
  }
  if (receipt.status !== "success") {
    if (receipt.gasUsed >= BigInt(relay.gas)) relayers.forgetGas(shape); // out of gas: estimate again next time
    return { state: "failed", reason: "the transaction reverted", txHash };
  }
  const logs = parseEventLogs({
    abi: tokenAbi,
    logs: receipt.logs.filter((l) => isAddressEqual(l.address, clients.network.usdc.address)),
  }) as unknown as {
    eventName: string;
    args: Record<string, unknown>;
  }[];
  const transferred = logs.some(
    (l) =>
      l.eventName === "Transfer" &&
      isAddressEqual(l.args.from as Address, message.from) &&
      isAddressEqual(l.args.to as Address, payTo) &&
      l.args.value === message.value,
  );
  const used = logs.some(
    (l) =>
      l.eventName === "AuthorizationUsed" &&
      isAddressEqual(l.args.authorizer as Address, message.from) &&
      sameBytes(l.args.nonce as Hex, message.nonce),
  );
  if (!transferred || !used)
    return { state: "failed", reason: "the receipt shows no matching transfer", txHash };
  return { state: "settled", txHash, blockNumber: receipt.blockNumber };
}
