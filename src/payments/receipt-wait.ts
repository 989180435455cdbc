/**
 * Waiting for a settlement transaction's receipt, within the settlement's receipt deadline. Shared
 * by settlement, the sync send's fallback (relayers.ts) and the paid-call bench's chain-only
 * baseline, so all of them read a receipt the same way.
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
 * later, and a block-driven wait would first sleep a whole polling interval. Their sum stays under
 * the default polling interval.
 */
export const QUICK_RECEIPT_DELAYS_MS = [2, 5, 10, 20, 40];

/**
 * Whether quick looks pay off on a chain: they are made while one of its last QUICK_LOOK_MEMORY
 * waits found its receipt at once or by them (or fewer waits are known), and otherwise by one wait
 * in QUICK_LOOK_PROBE_EVERY, so a chain that starts mining on arrival is noticed (each such probe
 * costs five reads on a chain that does not).
 */
export const QUICK_LOOK_MEMORY = 8;
export const QUICK_LOOK_PROBE_EVERY = 32;

export interface ReceiptWaitOptions {
  /** How long the wait may take, in ms. */
  receiptTimeoutMs: number;
  /** A block the chain had before the transaction was sent: the receipt can only be in a later one. */
  afterBlock: bigint;
  /**
   * `soon` (after a send): a look at once, then quick looks where they pay off, then block by
   * block. `block`: block by block only (a sync send already waiting for its block).
   */
  from?: "soon" | "block";
  /** Ends the wait (it throws) before its next read: nobody needs the receipt any more. */
  signal?: AbortSignal;
}

/**
 * One network's receipt waits (decisions.md, "Quick looks only where they pay off"). Block by
 * block, the receipt is read only once the chain's head has passed the newest block already
 * looked at, and the head's reads are shared by every wait (viem's block-number cache, at most
 * half a polling interval old). So on a chain with real block times a settlement costs about one
 * receipt read at once and one after its block, however many are waiting, where quick looks that
 * could not find it cost five more. On a chain that mines on arrival, most receipts are found at
 * once or by the quick looks.
 */
export class ReceiptWaiter {
  /** Whether each of the latest waits found its receipt at once or by quick looks (newest last). */
  private readonly quickLookHits: boolean[] = [];
  /** Waits making quick looks now, their outcome not yet known. */
  private quickLooking = 0;
  /** Waits since quick looks were last tried on a chain where they stopped paying off. */
  private sinceProbe = 0;

  constructor(private readonly client: PublicClient) {}

  async wait(hash: Hex, options: ReceiptWaitOptions): Promise<TransactionReceipt> {
    const deadline = Date.now() + options.receiptTimeoutMs;
    const read = () => {
      options.signal?.throwIfAborted();
      return this.read(hash, deadline);
    };
    const poll = this.client.pollingInterval;
    if (options.from !== "block") {
      const atOnce = await read();
      if (atOnce) {
        this.remember(true);
        return atOnce;
      }
      if (this.quickLooksPay()) {
        this.quickLooking++;
        let found: TransactionReceipt | null | undefined = null;
        try {
          for (const delay of QUICK_RECEIPT_DELAYS_MS) {
            await sleepUntil(Math.min(Date.now() + delay, deadline));
            found = await read();
            if (found) break;
          }
        } finally {
          this.quickLooking--;
        }
        this.remember(Boolean(found));
        if (found) return found;
      } else {
        // This chain puts nothing in a block that soon: the next look is a polling interval away.
        await sleepUntil(Math.min(Date.now() + poll, deadline));
      }
    }
    // Block by block: the receipt is read only in a block newer than the last one looked at.
    let lookedAt = options.afterBlock;
    for (;;) {
      options.signal?.throwIfAborted();
      const head = await bounded(
        this.client.getBlockNumber({ cacheTime: Math.floor(poll / 2) }).catch(() => null),
        deadline,
      );
      if (head !== null && head > lookedAt) {
        const receipt = await read();
        if (receipt) return receipt;
        // Not in the chain up to `head`; after a failed read (undefined), the same blocks are looked at again.
        if (receipt === null) lookedAt = head;
      }
      await sleepUntil(Math.min(Date.now() + poll, deadline));
    }
  }

  /** The receipt; null: not there yet; undefined: the RPC failed. Throws once the deadline passed. */
  private read(hash: Hex, deadline: number): Promise<TransactionReceipt | null | undefined> {
    return bounded(
      this.client
        .getTransactionReceipt({ hash })
        .catch((err: unknown) =>
          err instanceof TransactionReceiptNotFoundError ? null : undefined,
        ),
      deadline,
    );
  }

  private quickLooksPay(): boolean {
    // Still learning: only as many waits look quickly at once as are remembered.
    if (this.quickLookHits.length + this.quickLooking < QUICK_LOOK_MEMORY) return true;
    if (this.quickLookHits.includes(true)) return true;
    return ++this.sinceProbe % QUICK_LOOK_PROBE_EVERY === 0;
  }

  private remember(hit: boolean): void {
    this.quickLookHits.push(hit);
    if (this.quickLookHits.length > QUICK_LOOK_MEMORY) this.quickLookHits.shift();
  }
}

/** `read`, or an error once `deadline` (ms since the epoch) passes: the wait stays bounded however slowly the RPC answers. */
async function bounded<T>(read: Promise<T>, deadline: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">(
    (r) => (timer = setTimeout(() => r("late"), Math.max(0, deadline - Date.now()))),
  );
  const result = await Promise.race([read, late]).finally(() => clearTimeout(timer));
  if (result === "late") throw new Error("no receipt in time");
  return result;
}

/** Resolves at `time` (ms since the epoch). */
function sleepUntil(time: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, time - Date.now())));
}
