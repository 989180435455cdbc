import {
  BaseError,
  ContractFunctionRevertedError,
  encodeFunctionData,
  type Address,
  type Hex,
  type TransactionReceipt,
} from "viem";
import MULTICALL3_ABI from "../../contracts-abi/multicall3.json" with { type: "json" };
import type { RelayedTransaction } from "../store/types.js";
import { transferInReceipt } from "./receipt.js";
import {
  NotSent,
  RelayersCannotSend,
  SendRefused,
  SendUnknown,
  type Outgoing,
  type Sent,
  type Relayers,
  type SeenBlock,
} from "./relayers.js";
import { authorizationMessage, authorizationUsed, tokenAbi, transferArgs } from "./verify.js";
import type { Authorization } from "./wire.js";

/** Multicall3, at the same address on every chain that has it (Base, Polygon and their testnets do). */
export const MULTICALL3_ADDRESS: Address = "0xcA11bde05977b3631167028862bE2a173976CA11";
const multicall3Abi = MULTICALL3_ABI as typeof MULTICALL3_ABI;

/**
 * Submits authorizations through the relayer pool and reads each one's outcome from the
 * receipt's logs: credited only when its AuthorizationUsed and its Transfer(from → payTo, value)
 * are there (receipt.ts). An outcome that cannot be known in time (no receipt, an RPC that
 * stopped answering after the send) is `pending`: never a failure, since the money may have
 * moved. `unsent`: nothing was broadcast because a read or the store failed first, or because
 * no relayer key could send it (`relayers`: none has ETH for gas, the chain refused the fees):
 * ours to report, 503, never the payment's fault.
 */
export type Settlement =
  | { state: "settled"; txHash: Hex; blockNumber: bigint }
  | { state: "failed"; reason: string; txHash?: Hex }
  | { state: "unsent"; reason: string; relayers?: true }
  | {
      state: "pending";
      reason: string;
      txHash?: Hex;
      relay?: RelayedTransaction;
    };

/** One authorization to settle; `block` is the block its verification read (its base fee prices the send). */
export interface Transfer {
  auth: Authorization;
  signature: Hex;
  payTo: Address;
  block: SeenBlock;
}

/** A payment on its way to settlement: expected by the settler from `arrive()` until it settles or leaves. */
export interface Arrival {
  settle(transfer: Transfer): Promise<Settlement>;
  /** Gone without settling (refused, answered from its record): no longer expected. Idempotent. */
  leave(): void;
}

/**
 * Settles transfers as they come: each alone, or — with a batch window — gathered with the
 * payments being verified beside them (group commit). A payment announces itself (`arrive()`)
 * before its verification; one that reaches settlement while none other is expected (none being
 * verified, none waiting) is sent at once, so a lone payer never waits; one that finds others
 * expected waits for them, and the batch leaves as soon as every payment expected has joined it
 * or gone (refused), at `maxBatch`, or after `windowMs` at the most. A batch goes in one Multicall3
 * `aggregate3` transaction whose calls may each fail alone (`allowFailure`), so one authorization
 * that fails on chain (its balance spent since verification) never sinks the others. One send and
 * one receipt wait serve the batch. A wallet's (ERC-1271) bytes signature runs wallet code of
 * unknown cost: always sent alone.
 */
export class Settler {
  private waiting: { transfer: Transfer; done: (s: Settlement) => void }[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** Payments arrived (being verified) that have neither reached settlement nor gone. */
  private expected = 0;

  constructor(
    private readonly relayers: Relayers,
    private readonly options: {
      windowMs: number;
      maxBatch: number;
      receiptTimeoutMs: number;
    },
  ) {}

  /** A payment starts its way here (before its verification): one settling meanwhile waits for it, up to the window. */
  arrive(): Arrival {
    this.expected++;
    let here = true;
    /** Whether this call is the one that took the payment off the expected. */
    const gone = () => {
      const was = here;
      if (here) this.expected--;
      here = false;
      return was;
    };
    return {
      settle: (transfer) => {
        gone();
        return this.settle(transfer);
      },
      leave: () => {
        if (gone()) this.flushIfNoneExpected();
      },
    };
  }

  /** A waiting batch may have been waiting for the payment just gone alone: with none expected, it leaves now. */
  private flushIfNoneExpected(): void {
    if (this.expected === 0 && this.waiting.length > 0) this.flush();
  }

  private settle(transfer: Transfer): Promise<Settlement> {
    const alone =
      this.options.windowMs === 0 ||
      !isVrs(transfer.signature) ||
      (this.expected === 0 && this.waiting.length === 0);
    if (alone) {
      this.flushIfNoneExpected(); // a wallet's bytes signature, expected by a batch it does not join
      return this.send([transfer]).then((outcomes) => outcomes[0]!);
    }
    return new Promise((done) => {
      this.waiting.push({ transfer, done });
      if (this.expected === 0 || this.waiting.length >= this.options.maxBatch) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.options.windowMs);
    });
  }

  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.waiting.splice(0);
    if (batch.length === 0) return;
    void this.send(batch.map((w) => w.transfer)).then(
      (outcomes) => {
        for (const [i, w] of batch.entries()) w.done(outcomes[i]!);
      },
      // send() reports every failure as outcomes; this is a bug's last line of defence, and the money may have moved.
      (err: unknown) => {
        for (const w of batch) w.done({ state: "pending", reason: (err as Error).message });
      },
    );
  }

  /** One transaction for `transfers` (one: to the token; more: through Multicall3), and each one's outcome. */
  private async send(transfers: Transfer[]): Promise<Settlement[]> {
    const clients = this.relayers.clients;
    const token = clients.network.usdc.address;
    const messages = transfers.map((t) => authorizationMessage(t.auth));
    const calls = transfers.map((t, i) =>
      encodeFunctionData({
        abi: tokenAbi,
        functionName: "transferWithAuthorization",
        args: transferArgs(messages[i]!, t.signature) as never,
      }),
    );
    // The (v, r, s) form always has the same shape and cost; a wallet's bytes signature may not.
    const shape = isVrs(transfers[0]!.signature) ? `${token}:vrs` : null;
    const tx: Outgoing = {
      to: transfers.length === 1 ? token : MULTICALL3_ADDRESS,
      data:
        transfers.length === 1
          ? calls[0]!
          : encodeFunctionData({
              abi: multicall3Abi,
              functionName: "aggregate3",
              args: [
                calls.map((callData) => ({
                  target: token,
                  allowFailure: true,
                  callData,
                })),
              ],
            }),
      gas: { shape, sample: calls[0]!, count: transfers.length },
      validBefore: messages.reduce((max, m) => (m.validBefore > max ? m.validBefore : max), 0n),
    };
    // Fees from the newest block any of them saw.
    const block = transfers
      .map((t) => t.block)
      .reduce((newest, b) => (b.number > newest.number ? b : newest));
    // Before resending at a new nonce: did the first send land after all? Any used authorization says it may have.
    const alreadyUsed = async () =>
      (await Promise.all(messages.map((m) => authorizationUsed(clients, m.from, m.nonce)))).some(
        Boolean,
      );
    const all = (s: Settlement) => transfers.map(() => s);
    // One budget for the receipt, whether the send itself waits for it (sync send) or it is read after.
    const receiptBy = Date.now() + this.options.receiptTimeoutMs;
    let sent: Sent;
    try {
      sent = await this.relayers.send(tx, block, alreadyUsed, receiptBy);
    } catch (err) {
      if (err instanceof SendRefused) return all({ state: "failed", reason: err.reason });
      if (err instanceof NotSent) return all({ state: "unsent", reason: err.message });
      if (err instanceof RelayersCannotSend)
        return all({ state: "unsent", reason: err.message, relayers: true });
      // A timeout or a lost connection may have sent it.
      if (err instanceof SendUnknown)
        return all({ state: "pending", reason: err.reason, relay: err.relay, txHash: err.hash });
      return all({ state: "pending", reason: (err as Error).message });
    }
    const { hash: txHash, relay } = sent;
    let receipt: TransactionReceipt;
    try {
      receipt =
        sent.receipt ??
        (await clients.receipts.wait(txHash, {
          receiptTimeoutMs: Math.max(1, receiptBy - Date.now()),
          afterBlock: block.number,
        }));
    } catch {
      return all({
        state: "pending",
        reason: "no receipt in time",
        txHash,
        relay,
      });
    }
    if (receipt.status !== "success") {
      if (receipt.gasUsed >= BigInt(relay.gas)) this.relayers.forgetGas(shape); // out of gas: estimate again next time
      return all({
        state: "failed",
        reason: "the transaction reverted",
        txHash,
      });
    }
    return Promise.all(
      transfers.map(async (t, i): Promise<Settlement> => {
        const m = messages[i]!;
        if (
          transferInReceipt(receipt, {
            token,
            from: m.from,
            to: t.payTo,
            value: m.value,
            nonce: m.nonce,
          })
        )
          return { state: "settled", txHash, blockNumber: receipt.blockNumber };
        return {
          state: "failed",
          reason: await this.whyFailed(t, receipt.blockNumber),
          txHash,
        };
      }),
    );
  }

  /**
   * Why a transfer did not happen in the transaction that carried it: the token's own revert
   * reason, from a simulation of it alone at the end of that block (one read, failures only).
   */
  private async whyFailed(transfer: Transfer, blockNumber: bigint): Promise<string> {
    const clients = this.relayers.clients;
    try {
      await clients.public.simulateContract({
        address: clients.network.usdc.address,
        abi: tokenAbi,
        functionName: "transferWithAuthorization",
        args: transferArgs(authorizationMessage(transfer.auth), transfer.signature) as never,
        account: clients.relayers[0]!,
        blockNumber,
      });
    } catch (err) {
      const reverted =
        err instanceof BaseError
          ? (err.walk(
              (e) => e instanceof ContractFunctionRevertedError,
            ) as ContractFunctionRevertedError | null)
          : null;
      if (reverted?.reason) return `the transfer reverted: ${reverted.reason}`;
    }
    return "the receipt shows no matching transfer";
  }
}

const isVrs = (signature: Hex) => signature.length === 132;
