import {
  BaseError,
  FeeCapTooLowError,
  HttpRequestError,
  InsufficientFundsError,
  MethodNotFoundRpcError,
  MethodNotSupportedRpcError,
  RpcRequestError,
  TimeoutError,
  TipAboveFeeCapError,
  TransactionNotFoundError,
  type Address,
  type Hex,
  type LocalAccount,
  type TransactionReceipt,
} from "viem";
import { getNodeError } from "viem/utils";
import type { Logger } from "pino";
import type { RelayedTransaction, Store } from "../store/types.js";
import type { NetworkClients } from "./chain.js";

/**
 * Sending settlement transactions at the chain's pace, from one relayer key or a pool of them
 * (X402_RELAYER_PRIVATE_KEYS). Per send: no lock, no nonce read, no gas estimate, no fee read.
 * - Nonces: each key has one sequence in the store (Redis INCR in a script), shared by every
 *   gateway process, started from the chain's pending count the first time and moved forward to
 *   the chain's count again when the node says a nonce is taken (resync). A nonce handed out
 *   whose transaction the node refused is a gap that would hold up every later nonce: it is
 *   handed back to the sequence if no later one was taken, else filled at once with a zero-value
 *   self-transfer (`giveBack`); a gap left anyway (a process that died between taking and
 *   sending, a filler that failed) is found and filled by `repairGaps`.
 * - Gas: estimated once per token for the (v, r, s) form, whose calldata shape never changes,
 *   kept with a 50% margin (unused gas is not paid for) and estimated again after a failure.
 *   ERC-1271 (bytes signature) settlements run wallet code of any cost: estimated each time.
 * - Fees: from the block the verification already read (its base fee, doubled to survive a few
 *   full blocks) plus the priority fee, asked of the node at most every PRIORITY_FEE_TTL_MS:
 *   one computation per block.
 * - Send and receipt in one round trip where the RPC has EIP-7966 `eth_sendRawTransactionSync`
 *   (geth ≥ 1.16.6, Erigon ≥ 3.4, anvil, Base): the node answers the send with the receipt once
 *   the transaction is in a block. An RPC without it answers "method not found" (nothing sent):
 *   the same signed transaction goes by `eth_sendRawTransaction` instead, and so does every later
 *   one. At most X402_SEND_SYNC sends (8) wait so at once, each holding a connection until its
 *   block; more are sent plainly, their receipts read together (0: never).
 */
export interface SeenBlock {
  number: bigint;
  baseFeePerGas: bigint | null;
}

/** What a send's gas is worked out from: `count` token transfers like `sample`, of calldata shape `shape` (null: not cacheable). */
export interface GasNeed {
  shape: string | null;
  sample: Hex;
  count: number;
}

/** One settlement transaction: to the token (one transfer) or to Multicall3 (a batch). */
export interface Outgoing {
  to: Address;
  data: Hex;
  gas: GasNeed;
  /** The latest validBefore among its authorizations (kept with it, for the stuck-transaction replacement). */
  validBefore: bigint;
}

export interface Fees {
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

/**
 * The reason a sync send's receipt look is stopped with: one value made once. `abort()` without a
 * reason builds a DOMException (and its stack) on every paid call, only for the look to drop it.
 */
const SEND_ANSWERED = new Error("the sync send answered");

/** A send the node did not take: nothing was broadcast (the nonce it had is handed back or filled). */
export class SendRefused extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/**
 * A send no key of the pool could make for the relayers' or the chain's own reasons (no ETH for
 * gas, fees below the base fee): nothing was broadcast, and the payment is not at fault.
 */
export class RelayersCannotSend extends Error {}

/** One key's send refused for the relayer's or the chain's reasons (`relayerRefusal`): the next key may send it. */
class RelayerRefused extends Error {
  constructor(
    readonly reason: string,
    readonly kind: "funds" | "fees",
  ) {
    super(reason);
  }
}

/** What a send did: the transaction's hash and what was signed; its receipt when the node answered the send with it. */
export interface Sent {
  hash: Hex;
  relay: RelayedTransaction;
  receipt?: TransactionReceipt;
}

/** Nothing was broadcast because our side failed first (the store, an RPC that did not answer a read). */
export class NotSent extends Error {}

/** A send whose fate is unknown (no answer in time): it may have reached the chain. */
export class SendUnknown extends Error {
  constructor(
    readonly reason: string,
    readonly relay: RelayedTransaction,
    /** Its hash, when the node most likely has it (a sync send whose receipt did not come in time). */
    readonly hash?: Hex,
  ) {
    super(reason);
  }
}

const PRIORITY_FEE_TTL_MS = 10_000;
const GAS_MARGIN_PERCENT = 150n;
/** Gas of a zero-value transfer to an EOA: the filler of a nonce gap. */
const FILLER_GAS = 21_000n;

/** The node answered: the transaction was refused, not lost. */
const nodeAnswered = (err: unknown) =>
  err instanceof BaseError &&
  err.walk((e) => e instanceof RpcRequestError) !== null &&
  err.walk((e) => e instanceof TimeoutError || e instanceof HttpRequestError) === null;
/** The node already has a transaction at this nonce (mined or waiting): our sequence is behind. */
const nonceTaken = (err: unknown) =>
  nodeAnswered(err) &&
  /nonce too low|already known|already imported|replacement transaction underpriced|nonce.*(already|used)/i.test(
    (err as BaseError).details ?? (err as Error).message,
  );
/** The RPC does not have the method (EIP-7966's sync send): the node refused the request, not the transaction. */
const methodMissing = (err: unknown) =>
  err instanceof BaseError &&
  (err.walk(
    (e) => e instanceof MethodNotFoundRpcError || e instanceof MethodNotSupportedRpcError,
  ) !== null ||
    /\bmethod\b.*\b(not found|not supported|unsupported|does not exist|not available)\b/i.test(
      err.details ?? err.message,
    ));
/**
 * Why the node refused a send for the relayer's or the chain's reasons, never the payment's: the
 * key cannot pay for gas ("funds"), or the fees are below what the chain asks now ("fees": a
 * spiked base fee, a node's minimum price). viem's own node-error classes tell them apart (and
 * its patterns are kept up with the nodes'); a node's minimum price and a full pool have none.
 * null: any other refusal, which the payment may have caused (a simulation that reverts).
 */
const relayerRefusal = (err: unknown): "funds" | "fees" | null => {
  if (!nodeAnswered(err)) return null;
  const node = getNodeError(err as BaseError, {});
  if (node instanceof InsufficientFundsError) return "funds";
  if (node instanceof FeeCapTooLowError || node instanceof TipAboveFeeCapError) return "fees";
  const details = (err as BaseError).details ?? (err as Error).message;
  if (
    /transaction underpriced|gas price below minimum|txpool is full|exceeds the configured cap/i.test(
      details,
    )
  )
    return "fees";
  return null;
};
const gasTooLow = (err: unknown) =>
  /intrinsic gas too low|out of gas/i.test((err as BaseError).details ?? (err as Error).message);

/** How long a relayer whose sequence has not moved since the chain caught up goes without its nonce being read again. */
const RECHECK_CAUGHT_UP_MS = 60_000;
/**
 * How soon fillers the node refused (a key with no ETH) are tried again: at the next reconciler
 * look, then twice as long each time, up to the max. A refunded key's payments wait at most that
 * long, where they used to wait a whole stuck cycle per hole; a dry key costs one filler send
 * per try (the first refusal for funds ends the try).
 */
const FILL_RETRY_FIRST_MS = 1_000;
const FILL_RETRY_MAX_MS = 4_000;

export class Relayers {
  private turn = Math.floor(Math.random() * 1000);
  private readonly gasByShape = new Map<string, Promise<bigint>>();
  private priorityFee: { value: Promise<bigint>; at: number } | null = null;
  private feesOfBlock: { block: bigint; fees: Fees } | null = null;
  /**
   * Per relayer: the head nonce seen waiting, since when, and the sequence's next nonce then: the
   * nonces below it were taken before the chain was seen stuck (gap detection).
   */
  private readonly heads = new Map<Address, { nonce: number; since: number; next: number }>();
  /** Per relayer: nonces known to be holes whose filler the node has not taken yet, and when to try again. */
  private readonly holes = new Map<
    Address,
    { nonces: Set<number>; retryAt: number; delayMs: number }
  >();
  /** Per relayer: its sequence's next nonce when the chain was last seen to have mined all before it, and when. */
  private readonly caughtUp = new Map<Address, { next: number; at: number }>();

  constructor(
    readonly clients: NetworkClients,
    private readonly store: Store,
    private readonly log: Logger,
    /**
     * `slots`: how many sends may wait for their receipt at once (`eth_sendRawTransactionSync`);
     * more are sent plainly. Each holds a connection to the RPC until its block. 0 once the RPC
     * says it has no such method. `lookAfterMs`: how long a sync send goes unanswered before its
     * receipt is also read as after a plain send.
     */
    private readonly sync: { slots: number; lookAfterMs: number } = { slots: 8, lookAfterMs: 100 },
  ) {
    // Read at start, off the first paid call's way; a failure is read again at the first send.
    this.sequence(clients.relayers[0]!).catch(() => {});
  }

  /** Sync sends waiting for their block now. */
  private syncing = 0;

  /** The relayer with this address (a record's `relay.from`); the first one for records that name none. */
  account(address?: string): LocalAccount | undefined {
    if (!address) return this.clients.relayers[0];
    return this.clients.relayers.find((a) => a.address.toLowerCase() === address.toLowerCase());
  }

  /**
   * The chain's genesis block hash (16 hex digits of it), in every sequence's name: a sequence
   * belongs to one chain, so a chain started afresh under the same id (the development chain at
   * each `npm start` with a kept Redis, a restarted devnet) starts its own sequence from its own
   * count. Continuing the old one, every send waited behind nonces the new chain never saw.
   */
  private genesis: Promise<string> | null = null;
  private async sequence(account: LocalAccount): Promise<string> {
    this.genesis ??= this.clients.public.getBlock({ blockNumber: 0n }).then(
      (block) => block.hash!.slice(2, 18),
      (err: unknown) => {
        this.genesis = null; // asked again by the next send
        throw err;
      },
    );
    return `${this.clients.network.chainId}:${await this.genesis}:${account.address.toLowerCase()}`;
  }

  /** The next nonce of `account`'s sequence; the chain's pending count starts a sequence that does not exist yet. */
  async takeNonce(account: LocalAccount): Promise<number> {
    const name = await this.sequence(account);
    const nonce = await this.store.takeRelayerNonce(name, null);
    if (nonce !== null) return nonce;
    const start = await this.clients.public.getTransactionCount({
      address: account.address,
      blockTag: "pending",
    });
    return (await this.store.takeRelayerNonce(name, start))!;
  }

  /** Moves `account`'s sequence up to the chain's pending count (a nonce we thought free was taken). */
  async resync(account: LocalAccount): Promise<void> {
    const count = await this.clients.public.getTransactionCount({
      address: account.address,
      blockTag: "pending",
    });
    const next = await this.store.raiseRelayerNonce(await this.sequence(account), count);
    this.log.warn(
      { relayer: account.address, chainPending: count, next },
      "relayer nonce sequence resynchronised with the chain",
    );
  }

  /**
   * Gas for `need.count` transfers like `need.sample`: the token's cached (v, r, s) estimate, or a
   * fresh one for other shapes. A batch's is the sum of its transfers': each one's margin (50%,
   * some 30,000 gas) more than covers Multicall3's own cost per call (under 10,000).
   */
  private async gas(account: LocalAccount, need: GasNeed): Promise<bigint> {
    const estimate = () =>
      this.clients.public
        .estimateGas({
          account: account.address,
          to: this.clients.network.usdc.address,
          data: need.sample,
        })
        .then((g) => (g * GAS_MARGIN_PERCENT) / 100n);
    if (need.shape === null) return (await estimate()) * BigInt(need.count);
    const shape = need.shape;
    let gas = this.gasByShape.get(shape);
    if (!gas) {
      gas = estimate();
      this.gasByShape.set(shape, gas);
      gas.catch(() => this.gasByShape.delete(shape)); // a failed estimate is not kept
    }
    return (await gas) * BigInt(need.count);
  }

  /** EIP-1559 fees for a send made after seeing `block`: computed once per block. */
  async fees(block: SeenBlock): Promise<Fees> {
    if (this.feesOfBlock?.block === block.number) return this.feesOfBlock.fees;
    if (block.baseFeePerGas === null) return this.clients.public.estimateFeesPerGas(); // a chain without EIP-1559 base fees
    const stale = !this.priorityFee || Date.now() - this.priorityFee.at > PRIORITY_FEE_TTL_MS;
    if (stale) {
      const value = this.clients.public.estimateMaxPriorityFeePerGas();
      // The previous value serves while a fresh one is asked for; the first send waits for it.
      const previous = this.priorityFee?.value;
      this.priorityFee = { value: previous ? value.catch(() => previous) : value, at: Date.now() };
      if (!previous) value.catch(() => (this.priorityFee = null));
    }
    const priority = await this.priorityFee!.value;
    const fees = {
      maxFeePerGas: block.baseFeePerGas * 2n + priority,
      maxPriorityFeePerGas: priority,
    };
    if (!this.feesOfBlock || block.number > this.feesOfBlock.block)
      this.feesOfBlock = { block: block.number, fees };
    return fees;
  }

  /**
   * Signs and broadcasts `tx` (to the token, or a batch to Multicall3), from the next relayer of the pool
   * at its next nonce. Returns what was sent; throws SendRefused (nothing broadcast) or SendUnknown.
   * `alreadyDone` is asked before resending at a new nonce: a send whose first answer was lost may
   * have landed under another URL. With `receiptBy` (a time, ms since the epoch), the send may wait
   * for the receipt until then (sync send, above): a send still unanswered then is SendUnknown.
   * A key the node refuses for its own reasons (no ETH for gas) hands the send to the next key of
   * the pool; fees the chain refuses (a spiked base fee) are worked out once again from the block
   * being built. A refused send never reached the node (its nonce is handed back or filled), so
   * the transfer is in one node's hands at most once. When no key can send it:
   * RelayersCannotSend (nothing broadcast, the payment not at fault).
   */
  async send(
    tx: Outgoing,
    block: SeenBlock,
    alreadyDone: () => Promise<boolean>,
    receiptBy?: number,
  ): Promise<Sent> {
    const pool = this.clients.relayers;
    const first = this.turn++;
    let seen = block;
    let feesRenewed = false;
    let refused: RelayerRefused | null = null;
    for (let i = 0; i < pool.length; ) {
      const account = pool[(first + i) % pool.length]!;
      try {
        return await this.sendFrom(account, tx, seen, alreadyDone, receiptBy);
      } catch (err) {
        if (!(err instanceof RelayerRefused)) throw err;
        refused = err;
        const where = { relayer: account.address, network: this.clients.network.name };
        if (err.kind === "fees") {
          this.log.warn({ ...where, reason: err.reason }, "the chain refused a relayer's fees");
          // Once, at the fees of the block being built, from the same key; refused again, the next key tries.
          if (!feesRenewed) {
            feesRenewed = true;
            seen = await this.nextBlock(seen).catch(() => seen);
            continue;
          }
        } else {
          // An operator's emergency: the key's payments go to the pool's other keys meanwhile, or fail.
          this.log.error(
            { ...where, reason: err.reason },
            "relayer key cannot pay for gas: fund it (its settlements go to the pool's other keys)",
          );
        }
        i++;
      }
    }
    throw new RelayersCannotSend(refused!.reason);
  }

  /**
   * The block being built (`pending`), as a send's fees are worked out from: its base fee is the
   * one the node checks a send against, already past a spike the latest block may not show yet.
   */
  private async nextBlock(seen: SeenBlock): Promise<SeenBlock> {
    const pending = await this.clients.public.getBlock({ blockTag: "pending" });
    return {
      number: pending.number ?? seen.number + 1n,
      baseFeePerGas: pending.baseFeePerGas,
    };
  }

  /** `send` from one key of the pool; RelayerRefused when the node refuses it for the key's or the chain's reasons. */
  private async sendFrom(
    account: LocalAccount,
    tx: Outgoing,
    block: SeenBlock,
    alreadyDone: () => Promise<boolean>,
    receiptBy?: number,
  ): Promise<Sent> {
    const beforeSending = async <T>(step: Promise<T>): Promise<T> =>
      step.catch((err: unknown) => {
        const reason = (err as BaseError).shortMessage ?? "the transfer cannot be sent";
        const relayers = relayerRefusal(err);
        if (relayers) throw new RelayerRefused(reason, relayers);
        if (nodeAnswered(err)) throw new SendRefused(reason);
        throw new NotSent((err as BaseError).shortMessage ?? (err as Error).message);
      });
    const [gas, fees] = await beforeSending(
      Promise.all([this.gas(account, tx.gas), this.fees(block)]),
    );
    for (let attempt = 0; ; attempt++) {
      const nonce = await beforeSending(this.takeNonce(account));
      const relay: RelayedTransaction = {
        from: account.address,
        nonce,
        to: tx.to,
        validBefore: String(tx.validBefore),
        gas: String(gas),
        maxFeePerGas: String(fees.maxFeePerGas),
        maxPriorityFeePerGas: String(fees.maxPriorityFeePerGas),
        data: tx.data,
        sentAt: Date.now(),
      };
      const signed = await account.signTransaction({
        chainId: this.clients.network.chainId,
        type: "eip1559",
        to: tx.to,
        data: tx.data,
        nonce,
        gas,
        ...fees,
      });
      try {
        const synced =
          receiptBy !== undefined && this.syncing < this.sync.slots
            ? await this.sendSync(signed, relay, block, receiptBy)
            : null;
        return (
          synced ?? {
            hash: await this.clients.public.sendRawTransaction({ serializedTransaction: signed }),
            relay,
          }
        );
      } catch (err) {
        if (err instanceof SendUnknown) throw err;
        const reason = (err as BaseError).shortMessage ?? "the chain did not answer the submission";
        if (!nodeAnswered(err)) return await this.deliverAgain(signed, relay, reason);
        if (nonceTaken(err)) {
          // Our sequence is behind the chain (the key used elsewhere, a store that lost it), or our own
          // transaction landed through another URL after a timeout: the chain says which.
          if (await alreadyDone().catch(() => true)) throw new SendUnknown(reason, relay);
          await this.resync(account);
          if (attempt < 2) continue;
          throw new SendRefused(reason);
        }
        if (gasTooLow(err)) this.forgetGas(tx.gas.shape);
        await this.giveBack(account, nonce);
        const relayers = relayerRefusal(err);
        if (relayers) throw new RelayerRefused(reason, relayers);
        throw new SendRefused(reason);
      }
    }
  }

  /**
   * `signed` by `eth_sendRawTransactionSync`, answered with its receipt by `receiptBy`. null: the
   * RPC has no such method (nothing was sent). A node's error is a refusal only if the node does
   * not have the transaction: a wait that ran out before the block (EIP-7966's timeout error), or
   * "already known", leaves it in the node's pool, and its receipt is waited for as after a plain
   * send. No answer by `receiptBy` (or none at all) is SendUnknown: it may have been sent.
   */
  private async sendSync(
    signed: Hex,
    relay: RelayedTransaction,
    block: SeenBlock,
    receiptBy: number,
  ): Promise<Sent | null> {
    const hash = this.clients.transactionHash(signed);
    const sending = this.clients.public.sendRawTransactionSync({ serializedTransaction: signed });
    sending.catch(() => {}); // answered after `receiptBy`: nobody is waiting for it
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">(
      (r) => (timer = setTimeout(() => r("late"), Math.max(0, receiptBy - Date.now()))),
    );
    // Once the sync send answers (or is given up), the look for its receipt stops.
    const answered = new AbortController();
    let receipt: TransactionReceipt | "late";
    this.syncing++;
    try {
      receipt = await Promise.race([
        sending,
        late,
        this.lookForReceipt(hash, block, receiptBy, answered.signal),
      ]);
    } catch (err) {
      if (methodMissing(err)) {
        this.sync.slots = 0;
        this.log.info(
          { network: this.clients.network.name },
          "the RPC has no eth_sendRawTransactionSync: settlements are sent, then their receipts read",
        );
        return null;
      }
      if (!nodeAnswered(err)) throw err;
      const inPool = await this.known(hash);
      if (inPool === null) throw new SendUnknown("the transaction's fate is unknown", relay);
      if (inPool) return { hash, relay };
      throw err;
    } finally {
      answered.abort(SEND_ANSWERED);
      this.syncing--;
      clearTimeout(timer);
    }
    if (receipt === "late") throw new SendUnknown("no receipt in time", relay, hash);
    return { hash, relay, receipt };
  }

  /**
   * A send that got no answer (a lost connection, a timeout) may not have reached the node. Its
   * nonce is taken: left unsent, it would hold every later transaction of this relayer in the
   * node's pool until the stuck-transaction replacement, X402_STUCK_AFTER_MS later. So the node is
   * asked, and if it does not have the transaction, the same signed bytes are sent once more,
   * plainly (the same hash: they can land only once). With no answer either way, the send stays
   * SendUnknown (the payment pending), as it was.
   */
  private async deliverAgain(
    signed: Hex,
    relay: RelayedTransaction,
    reason: string,
  ): Promise<Sent> {
    const hash = this.clients.transactionHash(signed);
    let known = await this.known(hash);
    if (known === false)
      known = await this.clients.public.sendRawTransaction({ serializedTransaction: signed }).then(
        () => true,
        () => this.known(hash),
      );
    if (known) return { hash, relay };
    throw new SendUnknown(reason, relay);
  }

  /** Whether the node has `hash` (in its pool, or mined); null when it could not be asked. */
  private known(hash: Hex): Promise<boolean | null> {
    return this.clients.public.getTransaction({ hash }).then(
      () => true,
      (lookup: unknown) => (lookup instanceof TransactionNotFoundError ? false : null),
    );
  }

  /**
   * The receipt of `hash`, read block by block once the sync send has gone `lookAfterMs`
   * unanswered: a node slow to answer a sync send it has already mined must not hold the payment
   * (anvil under load can miss the block its sync send was waiting for, and then answers only at
   * the next block, or after 30 s). Never settles when the sync send answered first or no receipt
   * came by `receiptBy` (the sync send's own deadline says so).
   */
  private async lookForReceipt(
    hash: Hex,
    block: SeenBlock,
    receiptBy: number,
    answered: AbortSignal,
  ): Promise<TransactionReceipt> {
    const never = new Promise<never>(() => {});
    await new Promise((r) => setTimeout(r, this.sync.lookAfterMs));
    if (answered.aborted) return never;
    // Block by block, not in quick looks: on a chain with real blocks every sync send gets here,
    // and waits for its block (its receipt read only once the head passed `block`: receipt-wait.ts).
    const receipt = await this.clients.receipts
      .wait(hash, {
        receiptTimeoutMs: Math.max(1, receiptBy - Date.now()),
        afterBlock: block.number,
        from: "block",
        signal: answered,
      })
      .catch(() => null);
    return receipt ?? never;
  }

  /** The gas estimate of `shape` proved too low (an out-of-gas revert): the next send estimates again. */
  forgetGas(shape: string | null): void {
    if (shape !== null) this.gasByShape.delete(shape);
  }

  /**
   * A nonce whose transaction the node refused (so it was never in any pool) must not stay a hole
   * that every later transaction of the key waits behind. It is handed back to the sequence when
   * no later nonce was taken since (one atomic compare in the store, so it holds across
   * processes): the next send uses it, and nothing is spent on a filler. When a later one was
   * taken, possibly by another process with its transaction already in the node's pool, the
   * sequence cannot move back (that nonce would be handed out twice): the hole is filled at the
   * chain's current fees, not the refused send's, which the node may refuse for the same reason
   * (a spiked base fee). A filler refused too (a key with no ETH) is left to `repairGaps`.
   */
  private async giveBack(account: LocalAccount, nonce: number): Promise<void> {
    const given = await this.sequence(account)
      .then((name) => this.store.giveBackRelayerNonce(name, nonce))
      .catch(() => false);
    if (given) return;
    void this.fillerFees()
      .then((fees) => this.fill(account, nonce, fees))
      .catch((fillErr: unknown) => {
        this.log.warn(
          { relayer: account.address, nonce, err: String(fillErr) },
          "could not fill a nonce gap yet; the reconciler retries",
        );
        // No payment can hold a nonce whose send the node refused: a known hole, tried again at the next look.
        this.knownHoles(account.address, [nonce]);
      });
  }

  /** Adds `nonces` to `relayer`'s known holes; a relayer with none yet has them tried at the next look. */
  private knownHoles(relayer: Address, nonces: number[]): void {
    if (nonces.length === 0) return;
    const known = this.holes.get(relayer);
    if (known) for (const n of nonces) known.nonces.add(n);
    else
      this.holes.set(relayer, {
        nonces: new Set(nonces),
        retryAt: 0,
        delayMs: FILL_RETRY_FIRST_MS,
      });
  }

  /**
   * Fills `account`'s known holes that the chain has not passed (`mined`), in nonce order, when
   * their try is due. A nonce the node says is taken holds a transaction already (a filler sent
   * before, by this process or another): not a hole any more. Any other refusal keeps the hole for
   * the next try, later each time (FILL_RETRY_*); one for funds ends this try, the rest would be
   * refused the same.
   */
  private async fillKnownHoles(account: LocalAccount, mined: number): Promise<void> {
    const known = this.holes.get(account.address);
    if (!known) return;
    for (const n of known.nonces) if (n < mined) known.nonces.delete(n);
    if (known.nonces.size > 0 && Date.now() >= known.retryAt) {
      const fees = await this.fillerFees().catch(() => null);
      for (const nonce of fees ? [...known.nonces].sort((a, b) => a - b) : []) {
        const refusal = await this.fill(account, nonce, fees!).then(
          () => null,
          (err: unknown) => err,
        );
        if (refusal === null || nonceTaken(refusal)) {
          known.nonces.delete(nonce);
          continue;
        }
        this.log.warn(
          { relayer: account.address, nonce, err: String(refusal) },
          "could not fill a nonce gap yet; retrying",
        );
        if (relayerRefusal(refusal) === "funds") break;
      }
      known.retryAt = Date.now() + known.delayMs;
      known.delayMs = Math.min(known.delayMs * 2, FILL_RETRY_MAX_MS);
    }
    if (known.nonces.size === 0) this.holes.delete(account.address);
  }

  /** A filler's fees: above the chain's current ones, and above whatever may be waiting at its nonce unseen, so the node takes it as a replacement. */
  private async fillerFees(): Promise<Fees> {
    const current = await this.clients.public.estimateFeesPerGas();
    return {
      maxFeePerGas: current.maxFeePerGas * 2n,
      maxPriorityFeePerGas: current.maxPriorityFeePerGas * 2n,
    };
  }

  /** Uses up `nonce` with a zero-value self-transfer, so the relayer's later transactions can be mined. */
  async fill(account: LocalAccount, nonce: number, fees: Fees): Promise<Hex> {
    const signed = await account.signTransaction({
      chainId: this.clients.network.chainId,
      type: "eip1559",
      to: account.address,
      value: 0n,
      nonce,
      gas: FILLER_GAS,
      ...fees,
    });
    const hash = await this.clients.public.sendRawTransaction({ serializedTransaction: signed });
    this.log.warn({ relayer: account.address, nonce, tx: hash }, "filled a relayer nonce gap");
    return hash;
  }

  /**
   * Gap repair, run by the reconciler: a relayer whose sequence is ahead of the chain while the
   * chain's count stays at the same nonce for `afterMs` has holes (transactions dropped by the
   * node, nonces taken by a process that died before sending, fillers that failed). Every nonce
   * from there that was taken before the chain was seen stuck and that no payment record holds
   * is a hole, filled at once, each at its nonce, with a self-transfer at fees above the current
   * ones: filled one per stuck cycle, 16 holes held every paid call on the key for ~24 minutes.
   * Nonces a payment record holds are left to the stuck-transaction replacement, which re-sends
   * that payment's own transfer. `heldByPayments` is also told since when the chain has been seen
   * at that nonce. Holes whose filler was refused (a key with no ETH) are tried again promptly
   * (`fillKnownHoles`), not after another stuck cycle.
   */
  async repairGaps(
    afterMs: number,
    heldByPayments: (relayer: Address, nonce: number, since: number) => boolean,
  ): Promise<void> {
    for (const account of this.clients.relayers) {
      const next = await this.store.peekRelayerNonce(await this.sequence(account));
      if (next === null) continue;
      // No nonce taken since the chain had mined them all: no gap can have opened, and the chain
      // is not asked (an idle gateway would read every key's nonce every second, for ever). It is
      // asked again after a while all the same: a reorg can drop mined transactions.
      const settled = this.caughtUp.get(account.address);
      if (settled?.next === next && Date.now() - settled.at < RECHECK_CAUGHT_UP_MS) continue;
      const mined = await this.clients.public.getTransactionCount({
        address: account.address,
        blockTag: "latest",
      });
      const head = this.heads.get(account.address);
      if (next <= mined) {
        this.heads.delete(account.address);
        this.holes.delete(account.address);
        this.caughtUp.set(account.address, { next, at: Date.now() });
        continue;
      }
      this.caughtUp.delete(account.address);
      if (!head || head.nonce !== mined) {
        this.heads.set(account.address, { nonce: mined, since: Date.now(), next });
      } else if (Date.now() - head.since >= afterMs) {
        // Only nonces taken before `since`: one taken later may be a live settlement's that no
        // record names yet, and `heldByPayments` judges settling records by that instant.
        const holes: number[] = [];
        for (let nonce = mined; nonce < Math.min(head.next, next); nonce++)
          if (!heldByPayments(account.address, nonce, head.since)) holes.push(nonce);
        if (holes.length > 0) {
          this.knownHoles(account.address, holes);
          // Fillers sent and still not mined after another `afterMs` are judged again then.
          Object.assign(head, { since: Date.now(), next });
        }
      }
      await this.fillKnownHoles(account, mined);
    }
  }
}
