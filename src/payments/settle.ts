import {
  BaseError,
  ContractFunctionRevertedError,
  ExecutionRevertedError,
  HttpRequestError,
  InsufficientFundsError,
  NonceTooLowError,
  TimeoutError,
  encodeFunctionData,
  isAddressEqual,
  parseEventLogs,
  type Address,
  type Hex,
} from "viem";
import type { NetworkClients } from "./chain.js";
import { sameBytes } from "../lib/hex.js";
import { authorizationMessage, tokenAbi, transferArgs } from "./verify.js";
import type { RelayedTransaction } from "../store/types.js";
import type { Authorization } from "./wire.js";

/**
 * Submits the authorization through the relayer and reads the outcome from the receipt's
 * logs: credited only when a Transfer(from → payTo, value) and the AuthorizationUsed of this
 * nonce are there. An outcome that cannot be known in time (no receipt, an RPC that stopped
 * answering after the send) is `pending`: never a failure, since the money may have moved.
 */
export type Settlement =
  | { state: "settled"; txHash: Hex; blockNumber: bigint }
  | { state: "failed"; reason: string; txHash?: Hex }
  | { state: "pending"; reason: string; txHash?: Hex; relay?: RelayedTransaction };

/**
 * viem wraps every failure of writeContract (timeouts included) in the same outer error, so
 * the cause chain decides: the node refused (revert, nonce, funds) or we never got the lock.
 * Anything else — unknown — is treated as "may have been sent".
 */
function isDefiniteRefusal(err: unknown): boolean {
  if (err instanceof Error && err.message === RELAYER_BUSY) return true;
  if (!(err instanceof BaseError)) return false;
  const cause = err.walk((e) => e instanceof TimeoutError || e instanceof HttpRequestError || e instanceof ContractFunctionRevertedError || e instanceof ExecutionRevertedError || e instanceof NonceTooLowError || e instanceof InsufficientFundsError);
  return cause instanceof ContractFunctionRevertedError || cause instanceof ExecutionRevertedError || cause instanceof NonceTooLowError || cause instanceof InsufficientFundsError;
}

export const RELAYER_BUSY = "the relayer is busy";

/** Serialises the relayer's sends across every gateway process (one nonce at a time, from the chain). */
export type SendLock = <T>(name: string, fn: () => Promise<T>) => Promise<T>;

export async function settle(clients: NetworkClients, auth: Authorization, signature: Hex, payTo: Address, receiptTimeoutMs: number, lock: SendLock): Promise<Settlement> {
  const message = authorizationMessage(auth);
  let txHash: Hex;
  let relay: RelayedTransaction | undefined;
  const account = clients.relayer.account;
  try {
    // Gas and fees are worked out first, concurrently with other settlements; only "take the
    // next nonce, sign, broadcast" is serialised, and receipts are awaited concurrently below.
    const data = encodeFunctionData({ abi: tokenAbi, functionName: "transferWithAuthorization", args: transferArgs(message, signature) as never });
    const prepared = (await clients.relayer.prepareTransactionRequest({
      account,
      chain: clients.relayer.chain,
      to: clients.network.usdc.address,
      data,
      parameters: ["gas", "fees", "chainId", "type"],
    })) as { gas: bigint; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint };
    txHash = await lock(`relayer:${clients.network.chainId}:${account.address}`, async () => {
      const nonce = await clients.public.getTransactionCount({ address: account.address, blockTag: "pending" });
      relay = { nonce, gas: String(prepared.gas), maxFeePerGas: String(prepared.maxFeePerGas), maxPriorityFeePerGas: String(prepared.maxPriorityFeePerGas), data, sentAt: Date.now() };
      const signed = await account.signTransaction!({ ...(prepared as object), nonce } as never);
      return clients.public.sendRawTransaction({ serializedTransaction: signed });
    });
  } catch (err) {
    // Only a definite refusal moved nothing; a timeout or a lost connection may have sent it.
    if (isDefiniteRefusal(err)) return { state: "failed", reason: (err as BaseError).shortMessage ?? "the transaction was refused" };
    return { state: "pending", reason: (err as BaseError).shortMessage ?? "the chain did not answer the submission", relay };
  }
  let receipt;
  try {
    receipt = await clients.public.waitForTransactionReceipt({ hash: txHash, timeout: receiptTimeoutMs, retryCount: 0 });
  } catch {
    return { state: "pending", reason: "no receipt in time", txHash, relay };
  }
  if (receipt.status !== "success") return { state: "failed", reason: "the transaction reverted", txHash };
  const logs = parseEventLogs({ abi: tokenAbi, logs: receipt.logs.filter((l) => isAddressEqual(l.address, clients.network.usdc.address)) }) as unknown as {
    eventName: string;
    args: Record<string, unknown>;
  }[];
  const transferred = logs.some(
    (l) => l.eventName === "Transfer" && isAddressEqual(l.args.from as Address, message.from) && isAddressEqual(l.args.to as Address, payTo) && l.args.value === message.value,
  );
  const used = logs.some((l) => l.eventName === "AuthorizationUsed" && isAddressEqual(l.args.authorizer as Address, message.from) && sameBytes(l.args.nonce as Hex, message.nonce));
  if (!transferred || !used) return { state: "failed", reason: "the receipt shows no matching transfer", txHash };
  return { state: "settled", txHash, blockNumber: receipt.blockNumber };
}
