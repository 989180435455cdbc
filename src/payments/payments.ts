import { getAddress, type Address, type Hex } from "viem";
import type { Config } from "../config.js";
import { eventRecord } from "../events/types.js";
import { admitted } from "../http/auth.js";
import { ApiError } from "../http/errors.js";
import { sameBytes } from "../lib/hex.js";
import { newEventId, randomId } from "../lib/ids.js";
import type { Foundation, Services } from "../services.js";
import type { AdmitOutcome, PaymentGrant, PaymentRecord } from "../store/types.js";
import { formatUsd } from "../lib/money.js";
import { createChainClients, type NetworkClients } from "./chain.js";
import type { Offer } from "./offer.js";
import { Relayers, type SeenBlock } from "./relayers.js";
import { Settler, type Settlement } from "./settle.js";
import {
  authorizationMessage,
  authorizationUsed,
  invalidPayment,
  normaliseSignature,
  verifyChainState,
  verifySignature,
  verifySigned,
  verifyTerms,
} from "./verify.js";
import { createWalletAccount, walletAccountId } from "./wallet-accounts.js";
import type { Authorization, PaymentHeader, RequirementsV2 } from "./wire.js";
import { RefusalLimit } from "../http/refusal-limit.js";

/**
 * Accepting an x402 payment, start to end: find the network → verify → claim the authorization
 * (once, across every process) → settle it on chain ourselves → credit the payer's wallet
 * account with `payment.received`, atomically and once. A call is then charged from those
 * credits like any other, so a failed call leaves the money there as credits (decisions.md D7).
 */
export interface AcceptedPayment {
  /** The payment's id (`<chain id>:<token>:<payer>:<nonce>`, lower-case). */
  id: string;
  accountId: string;
  payer: Address;
  txHash: Hex;
  /** As the client named it: the v1 name or the v2 CAIP-2 id. */
  network: string;
  /** For a paid call: the idempotency key the call runs under (the same for every retry of this payment). */
  callKey: string | null;
  /** That key is one the client chose (Idempotency-Key, payment identifier), not the payment's own. */
  clientKeyed: boolean;
  /** What the payment bought, as its `payment.received` says: for a plan, what the credit did with it. */
  type: PaymentGrant["type"];
  /** The credits the payment added to its account. */
  credits: number;
  /** How long the call's answer is kept for retries of this payment (seconds). */
  retainSeconds: number;
  /**
   * A paid call's payment just settled here: its record's save as settled, made beside the call's
   * admission (the caller awaits it before answering). Absent when the record was saved already.
   */
  recorded?: Promise<void>;
}

/** What a request pays for, besides the offer it answers. */
export interface PaymentRequest {
  offer: Offer;
  priceAtomic: bigint;
  grant: PaymentGrant;
  /** The account credited (a keyed buyer); default: the paying wallet's own account. */
  beneficiary?: string;
  /**
   * A paid tool call: the call's fingerprint (tool + body) and the idempotency key the client
   * chose (its Idempotency-Key or x402 payment-identifier), null for "the payment itself".
   * `conflict` answers a new authorization under that key when the key's payment was made for
   * another call (another tool or body): 409, and the authorization is never settled.
   */
  call?: { fingerprint: string; key: string | null; conflict: () => ApiError };
  /**
   * Runs once the payer is proven (signature checked) and before any money moves: what could
   * still refuse the request (the account's rate limit), or answer it without this payment (a
   * paid call already answered under its idempotency key), does so here by throwing, leaving the
   * authorization unused. Given the account credited and the call as this payment keys it.
   */
  beforeSettling?: (accountId: string, call: PaymentRequest["call"]) => Promise<void>;
  /**
   * Who is paid: Toolgate's own X402_PAY_TO by default; as a facilitator, the resource server's
   * own address (the facilitator never receives the funds).
   */
  payTo?: Address;
  /**
   * A settlement made as a facilitator: charged its fee instead of crediting the payer, to the
   * account under the key (its hash) that asked for it.
   */
  facilitator?: { feeCredits: number; keyHash: string };
  /** The longest an authorization may stay valid from now: the requirement's, as a facilitator; default X402_MAX_TIMEOUT_SECONDS. */
  maxTimeoutSeconds?: number;
}

/**
 * The ledger request id of a facilitator settlement's fee: one per claim of the payment (an
 * authorization released unsettled may be settled again later, and is charged again then).
 * Records of older versions were charged on settlement, under the payment id alone.
 */
export const facilitatorFeeRequestId = (paymentId: string, claim?: string) =>
  claim ? `facilitator:${paymentId}:${claim}` : `facilitator:${paymentId}`;

/** The idempotency key of a paid call keyed by its payment alone (no key of the client's). */
const paymentCallKey = (paymentId: string) => `x402:${paymentId}`;

/**
 * A key gone since it asked for a facilitator settlement (revoked, expired, pruned): no reason to
 * refuse the account its settlement's fee. (A key's budget still is: it holds for a fee not taken.)
 */
const KEY_REFUSALS = new Set<AdmitOutcome["status"]>(["invalid_key", "revoked", "expired"]);

export class Payments {
  readonly clients: Map<string, NetworkClients>;
  /** Each network's relayer pool: nonce sequences, gas and fee caches. */
  private readonly relayerPools = new Map<NetworkClients, Relayers>();
  /** Each network's settler: sends transfers alone or gathered in batches (X402_BATCH_WINDOW_MS). */
  private readonly settlers = new Map<NetworkClients, Settler>();

  /**
   * The longest a live process can take to settle (a few RPC calls: the first nonce and gas
   * reads, the send, a resync; then the receipt wait); a "settling" record older than this was
   * left by a process that died.
   */
  readonly settlingDeadlineMs: number;

  /**
   * Keyless callers' refused payments, per client address (http/refusal-limit.ts): each new
   * payment is checked on chain (a paid RPC round trip) before anything proves who sent it.
   */
  readonly refused: RefusalLimit;

  constructor(
    private readonly services: Foundation & Pick<Services, "books">,
    readonly config: NonNullable<Config["x402"]>,
  ) {
    this.clients = createChainClients(config);
    // Each RPC call may try every URL of a network in turn before it fails.
    const urls = Math.max(1, ...config.networks.map((n) => n.rpcUrls.length));
    this.settlingDeadlineMs =
      config.batchWindowMs + 6 * urls * config.rpcTimeoutMs + config.receiptTimeoutMs;
    this.refused = new RefusalLimit(
      services,
      "x402-refused",
      " Retry with a valid payment once Retry-After has passed.",
    );
  }

  relayers(clients: NetworkClients): Relayers {
    let pool = this.relayerPools.get(clients);
    if (!pool) {
      pool = new Relayers(clients, this.services.store, this.services.log, {
        slots: this.config.sendSync,
        lookAfterMs: this.config.pollMs,
      });
      this.relayerPools.set(clients, pool);
    }
    return pool;
  }

  private settler(clients: NetworkClients): Settler {
    let settler = this.settlers.get(clients);
    if (!settler) {
      settler = new Settler(this.relayers(clients), {
        windowMs: this.config.batchWindowMs,
        maxBatch: this.config.batchMax,
        receiptTimeoutMs: this.config.receiptTimeoutMs,
      });
      this.settlers.set(clients, settler);
    }
    return settler;
  }

  private networkOf(header: PaymentHeader, offer: Offer): NetworkClients {
    if (header.version === 1) {
      if (header.scheme !== "exact")
        throw invalidPayment("only the exact scheme is accepted", "unsupported_scheme");
      const clients = this.clients.get(header.network);
      if (!clients || clients.network.name !== header.network)
        throw invalidPayment(
          `the network ${header.network} is not accepted here`,
          "invalid_network",
        );
      return clients;
    }
    // v2: a payload naming the resource it pays for pays for that one only: one built from another
    // resource's offer at the same price (another tool, a credit pack for a plan) is not this payment.
    const resource = offer.v2.resource.url;
    if (header.resource !== null && header.resource !== resource)
      throw invalidPayment(
        `the payment is for the resource ${JSON.stringify(header.resource.slice(0, 200))}, not ${JSON.stringify(resource)}`,
        "invalid_payment_requirements",
      );
    // v2: the requirement the client accepted must be, field for field, one that was offered.
    const offered = offer.v2.accepts.find((r) => sameRequirement(r, header.accepted));
    if (!offered)
      throw invalidPayment(
        "the accepted requirement is not one this resource offers (network, asset, amount or recipient differ)",
        "invalid_payment_requirements",
      );
    return this.clients.get(offered.network)!;
  }

  /**
   * Verify → claim → settle → credit. Every request is verified in full (the authorization's
   * recipient, amount and signature; the network and requirement it accepted) before anything
   * stored about its payment may answer it; only the chain-state checks (unused, balance,
   * simulation, time window) are left out for a payment already known, since its settlement
   * changed them.
   */
  private prepare(header: PaymentHeader, request: PaymentRequest) {
    const clients = this.networkOf(header, request.offer);
    const { network } = clients;
    const auth = header.authorization;
    const signature = normaliseSignature(header.signature);
    const payer = getAddress(auth.from);
    const id = `${network.chainId}:${network.usdc.address}:${payer}:${auth.nonce}`.toLowerCase();
    const networkName = header.version === 1 ? network.name : network.caip2;
    const expected = {
      payTo: request.payTo ?? this.config.payTo,
      price: request.priceAtomic,
      maxTimeoutSeconds: request.maxTimeoutSeconds ?? this.config.maxTimeoutSeconds,
    };
    return { clients, network, auth, signature, payer, id, networkName, expected };
  }

  /**
   * The facilitator's `verify`: every check `accept` makes before money moves (the authorization
   * itself, then the chain's state), claiming nothing. Returns the payer; throws the refusal.
   */
  async verify(
    header: PaymentHeader,
    request: PaymentRequest,
  ): Promise<{ payer: Address; network: string }> {
    const { clients, network, auth, signature, payer, networkName, expected } = this.prepare(
      header,
      request,
    );
    try {
      await verifySigned(clients, auth, signature, expected);
      await verifyChainState(clients, auth, signature, expected);
    } catch (err) {
      throw this.refusal(err, network.name);
    }
    return { payer, network: networkName };
  }

  async accept(header: PaymentHeader, request: PaymentRequest): Promise<AcceptedPayment> {
    const { clients, network, auth, signature, payer, id, networkName, expected } = this.prepare(
      header,
      request,
    );
    const context: KnownContext = { request, auth, payer, network: networkName };
    try {
      verifyTerms(auth, expected);
    } catch (err) {
      throw this.refusal(err, network.name);
    }
    // A payment already known answers only a request whose signature is proven: the very
    // authorization and signature the chain accepted when it was claimed, or one checked here.
    const answerIfKnown = async (found: PaymentRecord | null) => {
      if (!found) return null;
      const asClaimed =
        found.signature !== undefined &&
        sameBytes(found.signature, signature) &&
        sameAuthorization(found.authorization, auth);
      if (!asClaimed)
        await verifySignature(clients, auth, signature).catch((err: unknown) => {
          throw this.refusal(err, network.name);
        });
      return this.answerKnown(found, context);
    };
    // The payer's wallet account is looked up beside the payment's record (one wait, not two) and
    // through the chain's verification; it is made only once the payer is proven.
    const existingAccount = request.beneficiary
      ? null
      : this.services.store.getAccount(walletAccountId(payer));
    existingAccount?.catch(() => {}); // awaited below, unless the payment is answered or refused first
    const known = await answerIfKnown(await this.services.store.getPayment(id));
    if (known) return known;

    // Expected by the settler from here until settled or gone: a payment settling meanwhile waits
    // for it (up to the batch window) instead of leaving alone.
    const arrival = this.settler(clients).arrive();
    let record: PaymentRecord;
    let outcome: Settlement;
    try {
      // A new payment's signature is proven by the chain's simulation of the transfer (the token
      // checks it), read together with its state.
      let seen: SeenBlock;
      try {
        const verified = this.phase("verify", network.name);
        seen = await verifyChainState(clients, auth, signature, expected);
        verified();
      } catch (err) {
        // A bad signature is named as such, whatever else the chain refused.
        if (err instanceof ApiError)
          await verifySignature(clients, auth, signature).catch((bad: unknown) => {
            throw this.refusal(bad, network.name);
          });
        if (err instanceof ApiError) {
          // The same authorization, sent twice at once, may have been claimed and settled by the
          // other request while this one was reading the chain: its record, not the chain, answers.
          const claimed = await answerIfKnown(await this.services.store.getPayment(id));
          if (claimed) return claimed;
        }
        throw this.refusal(err, network.name);
      }
      // A new wallet's account is opened only now, the payer proven, beside its first rate-limit
      // slot and the payment's claim (checkedBesideClaim).
      const accountId = request.beneficiary ?? walletAccountId(payer);
      const opening =
        request.beneficiary || (await existingAccount!)
          ? null
          : createWalletAccount(this.services, payer);
      record = {
        id,
        network: network.name,
        payer,
        value: auth.value,
        state: "settling",
        accountId,
        grant: request.grant,
        txHash: null,
        createdAt: Date.now(),
        authorization: { ...auth },
        signature,
        resource: request.offer.v2.resource.url,
        call: request.call
          ? { key: request.call.key ?? paymentCallKey(id), fingerprint: request.call.fingerprint }
          : null,
        // The transfer cannot be in an earlier block: whoever finishes this settlement reads logs from here.
        sentFromBlock: seen.number.toString(),
        ...(request.payTo ? { payTo: expected.payTo } : {}),
        ...(request.facilitator
          ? {
              facilitatorFee: request.facilitator.feeCredits,
              feeRequestId: facilitatorFeeRequestId(id, randomId(12)),
              feeKeyHash: request.facilitator.keyHash,
            }
          : {}),
      };
      // A call under a key the client chose is paid once: a payment it already has (another
      // authorization, whose process died before answering) pays for it instead of this one.
      const keyedByClient = isKeyedByClient(record);
      const claim = () =>
        this.services.store.claimPayment(
          record,
          // As long as the call's idempotency record (claimCallKey), which answers it after that.
          keyedByClient ? this.config.retentionSeconds * 1000 : undefined,
        );
      const check = () =>
        this.openedAndChecked(opening, () => request.beforeSettling?.(accountId, request.call));
      const existing = keyedByClient
        ? await check().then(claim)
        : await this.checkedBesideClaim(check, claim, id);
      if (existing)
        return existing.id === id
          ? this.answerKnown(existing, context)
          : this.answerForCall(existing, context);
      if (record.feeRequestId) await this.reserveFee(record);

      const settled = this.phase("settle", network.name);
      outcome = await arrival.settle({
        auth,
        signature,
        payTo: expected.payTo,
        block: seen,
      });
      settled();
    } finally {
      arrival.leave();
    }
    this.services.metrics.payments.inc({ outcome: outcome.state, network: network.name });
    // Refused by the relayers' node for its own reasons, the send may still have reached another:
    // with several RPC URLs, one whose answer timed out took it into its pool before the next
    // refused it ("underpriced"). The chain decides, as for a failed send; moved, it is pending.
    if (
      outcome.state === "unsent" &&
      !(outcome.relayers && (await this.mayHaveMoved(clients, auth)))
    ) {
      await this.release(record); // nothing was broadcast: the authorization may be retried
      if (outcome.relayers) throw relayersUnavailable(network.name);
      throw this.refusal(new Error(outcome.reason), network.name);
    }
    if (outcome.state === "failed" && !(await this.mayHaveMoved(clients, auth))) {
      await this.release(record); // nothing moved: the authorization may be retried
      throw invalidPayment(`settlement failed: ${outcome.reason}`, "invalid_transaction_state");
    }
    if (outcome.state !== "settled") {
      // An unsent outcome here was refused by a relayer's node but may have moved (above): no hash.
      const txHash = ("txHash" in outcome ? outcome.txHash : null) ?? null;
      await this.services.store.savePayment({
        ...record,
        state: "pending",
        txHash,
        relay: outcome.state === "pending" ? (outcome.relay ?? null) : null,
      });
      this.services.log.warn(
        { payment: id, reason: outcome.reason, tx: txHash },
        "x402 settlement pending",
      );
      throw pending();
    }
    const done: PaymentRecord = {
      ...record,
      state: "settled",
      txHash: outcome.txHash,
      expiresAt: this.retainUntil(record),
    };
    // A purchase's one "service" is its credit: claimed before the record says "settled", so a
    // duplicate that then sees "settled" cannot take what this request paid for.
    if (!record.call) await this.services.store.claimPaymentService(id, done.expiresAt!);
    const credited = this.phase("credit", network.name);
    const { saved, recorded } = await this.creditThenRecord(done);
    credited();
    if (!record.call) {
      await recorded;
      return this.accepted(saved, networkName);
    }
    // A paid call needs only the credit to be admitted: the record is saved beside the call's
    // admission (tools/paid-call.ts), a Redis round trip off its way. Until it is, the record says
    // "settling": a duplicate of this payment waits, and if the save is lost the reconciler finds
    // the payment open and finishes it (its credit is once per payment, so it adds nothing).
    return { ...this.accepted(saved, networkName), recorded };
  }

  /**
   * Sends a payment whose process died between claiming it and sending it — a "settling" record
   * past its deadline, its authorization unused on chain — as that process would have, and credits
   * it once settled; taken over first (`takeOverPayment`), so one process of all does this, and
   * the payer told "pending, do not pay again" is served on a retry within seconds, not after the
   * authorization expires (minutes). A second send is safe whatever the dead process did: the
   * token uses an authorization once, so a transfer of it already on its way makes this one fail
   * on chain, and nothing moves twice. A payment the chain now refuses (its balance spent, too
   * close to expiry) or that could not be sent is left open: the reconciler credits it if it was
   * used after all, else releases it at expiry, as before. A paid call under a key the client
   * chose is still paid once: a new authorization under that key finds this payment through the
   * call's index (claimPayment) and is never settled. A facilitator settlement is sent only with
   * its fee debited (`abandonedFee`). Answers whether it settled here, or was released.
   */
  async settleAbandoned(found: PaymentRecord): Promise<"settled" | "open" | "released"> {
    const clients = this.clients.get(found.network);
    if (!clients || !found.signature) return "open";
    const record: PaymentRecord = { ...found, createdAt: Date.now() };
    if (!(await this.services.store.takeOverPayment(found, record))) return "open";
    if (record.feeRequestId && !(await this.abandonedFee(record))) {
      await this.release(record);
      return "released";
    }
    const auth = found.authorization as unknown as Authorization;
    const signature = found.signature as Hex;
    const payTo = (found.payTo as Address | undefined) ?? this.config.payTo;
    const arrival = this.settler(clients).arrive();
    let outcome: Settlement;
    try {
      const seen = await verifyChainState(clients, auth, signature, {
        payTo,
        price: BigInt(found.value),
        // Checked when it was claimed; only the time left matters now.
        maxTimeoutSeconds: Number.MAX_SAFE_INTEGER,
      }).catch((err: unknown) => {
        if (err instanceof ApiError) return null;
        throw err;
      });
      if (!seen) return "open";
      outcome = await arrival.settle({ auth, signature, payTo, block: seen });
    } finally {
      arrival.leave();
    }
    this.services.metrics.payments.inc({ outcome: outcome.state, network: clients.network.name });
    if (outcome.state === "pending")
      await this.services.store.savePayment({
        ...record,
        state: "pending",
        txHash: outcome.txHash ?? null,
        relay: outcome.relay ?? null,
      });
    if (outcome.state !== "settled") return "open";
    await this.credit({ ...record, state: "settled", txHash: outcome.txHash });
    return "settled";
  }

  /**
   * Before an abandoned facilitator settlement is sent: its fee, debited under the claim's request
   * id. The dead process may have died before its debit (made now), after it (not made again), or
   * in the middle of releasing the claim, its fee given back (the client was told it failed, and
   * nothing was sent: the release is finished, not the settlement). A fee the account cannot pay is
   * not taken, and the claim is released, as when it is refused at the settle itself. The key that
   * asked may be revoked or expired since: the settlement was its to ask for then, so the fee is
   * the account's (a fee it had taken stays taken: refused for the key, the settlement it may have
   * sent already would land with its fee given back and its record gone).
   * Answers whether the settlement may be sent.
   */
  private async abandonedFee(record: PaymentRecord): Promise<boolean> {
    let outcome = await this.debitFee(record);
    if (KEY_REFUSALS.has(outcome.status)) outcome = await this.debitFee(record, null);
    if (outcome.status === "ok" && !outcome.refunded) return true;
    this.services.log.warn(
      { payment: record.id, account: record.accountId, outcome: outcome.status },
      "abandoned facilitator settlement released: its fee was refused or given back",
    );
    return false;
  }

  /**
   * A new wallet's account is opened (`opening`) in the same store round trip as `beforeSettling`
   * takes its first rate-limit slot: the account's id is known from the address, and the two are
   * started in one turn of the loop, so on one Redis node they leave in one write and run in that
   * order. Should the slot be asked first all the same (the account's script re-sent after a
   * NOSCRIPT, a Cluster node's redirect), it found no account: it is asked again once the account
   * exists.
   */
  private async openedAndChecked(
    opening: Promise<unknown> | null,
    beforeSettling: () => Promise<void> | undefined,
  ): Promise<void> {
    const [opened, checked] = await Promise.allSettled([opening, beforeSettling()]);
    if (opened.status === "rejected") throw opened.reason;
    if (checked.status === "fulfilled") return;
    if (
      !opening ||
      !(checked.reason instanceof ApiError) ||
      checked.reason.code !== "invalid_api_key"
    )
      throw checked.reason;
    await beforeSettling();
  }

  /**
   * The caller's check (a new wallet's account opened, the rate-limit slot taken) and the
   * payment's claim, started in one turn of the loop: on one Redis node they leave in one write
   * and run in that order, a round trip off every paid call's way. A claim made for a caller the
   * check then refuses is released (nothing was sent) and the refusal answers, as if it had never
   * been made. Should the process die in between, the reconciler settles the claimed payment and
   * credits the account (settleAbandoned): the money is the payer's credits, never lost. Not for a
   * call under a key the client chose, whose check claims that key and may answer the call from it.
   */
  private async checkedBesideClaim(
    check: () => Promise<void>,
    claim: () => Promise<PaymentRecord | null>,
    id: string,
  ): Promise<PaymentRecord | null> {
    const [checked, claimed] = await Promise.allSettled([check(), claim()]);
    if (checked.status === "fulfilled") {
      if (claimed.status === "rejected") throw claimed.reason;
      return claimed.value;
    }
    if (claimed.status === "fulfilled" && claimed.value === null)
      await this.services.store.releasePayment(id).catch((err: unknown) =>
        // Left "settling": past its deadline the reconciler takes it over as a dead process's.
        this.services.log.warn(
          { err: String(err), payment: id },
          "could not release a claimed payment",
        ),
      );
    throw checked.reason;
  }

  /** Starts timing one phase of a new payment (metrics: toolgate_payment_phase_seconds); call the answer at its end. */
  private phase(phase: "verify" | "settle" | "credit", network: string): () => void {
    const end = this.services.metrics.paymentPhases.startTimer({ phase, network });
    return () => void end();
  }

  /**
   * Whether a settlement refused by the node may still have moved the money: a send retried on
   * another RPC URL after a timeout is refused ("nonce too low") once the first one landed. The
   * chain decides; when it cannot be asked, the answer is "maybe", and the reconciler finishes it.
   */
  private async mayHaveMoved(clients: NetworkClients, auth: Authorization): Promise<boolean> {
    const message = authorizationMessage(auth);
    return authorizationUsed(clients, message.from, message.nonce).catch(() => true);
  }

  /** A refused verification as the client sees it: the refusal itself, or 503 when the chain did not answer. */
  private refusal(err: unknown, network: string): ApiError {
    if (err instanceof ApiError) {
      this.services.metrics.payments.inc({ outcome: "rejected", network });
      return err;
    }
    this.services.metrics.chainRpcErrors.inc({ network });
    return new ApiError(
      "chain_unavailable",
      `The ${network} RPC did not answer; nothing was charged. Retry shortly.`,
      { headers: { "Retry-After": "5" } },
    );
  }

  private accepted(record: PaymentRecord, network: string): AcceptedPayment {
    return {
      id: record.id,
      accountId: record.accountId,
      payer: getAddress(record.payer),
      txHash: record.txHash as Hex,
      network,
      callKey: record.call?.key ?? null,
      clientKeyed: isKeyedByClient(record),
      type: record.grant.type,
      credits: record.grant.credits,
      retainSeconds: Math.max(1, Math.ceil(((record.expiresAt ?? Date.now()) - Date.now()) / 1000)),
    };
  }

  /**
   * A payment already claimed, for a request verified in full. It must be the same authorization
   * for the same resource (and the same call, or the same buyer). Still settling → wait for the
   * outcome; pending → 503; settled → a paid call runs (or replays) under the payment's
   * idempotency key, a purchase is answered once; otherwise it is used up.
   */
  private async answerKnown(found: PaymentRecord, context: KnownContext): Promise<AcceptedPayment> {
    const { request } = context;
    const used = (why: string) =>
      new ApiError(
        "payment_already_used",
        `This payment authorization has already been used${why}.`,
      );
    if (!sameAuthorization(found.authorization, context.auth))
      throw used(" (another authorization with this nonce was settled)");
    if (found.resource !== undefined && found.resource !== request.offer.v2.resource.url)
      throw used(" for another resource");
    if (request.beneficiary && found.accountId !== request.beneficiary)
      throw used(" by another account");
    // A payment sent with an API key paid for its key's account, and its call was the key's: a
    // retry without the key would run (or replay) that call on the key's account past the key's
    // controls (revoked, expired, other tools) and show its balance to whoever holds the payment.
    if (!request.beneficiary && found.accountId !== walletAccountId(getAddress(found.payer)))
      throw used(" with an API key: send it again with the same key");
    if (found.call && request.call && found.call.fingerprint !== request.call.fingerprint) {
      throw new ApiError(
        "idempotency_conflict",
        "This payment was already used for a call with a different body; a payment pays for one call.",
        { param: "payment" },
      );
    }
    const record = await this.outcomeOf(found);
    if (!record) throw used(""); // released: the settlement failed and nothing moved; the chain decides on a retry
    if (record.state !== "settled") throw pending();
    if (record.call && request.call) return this.accepted(record, context.network);
    if (
      !record.call &&
      (await this.services.store.claimPaymentService(
        record.id,
        record.expiresAt ?? Date.now() + this.config.retentionSeconds * 1000,
      ))
    ) {
      return this.accepted(record, context.network);
    }
    throw used("");
  }

  /**
   * A claimed payment's record once it is no longer settling, or still settling once the settling
   * process's own deadline has passed; null once released. A duplicate that arrived while the
   * first request settles waits for its outcome, but no longer than that process's deadline: past
   * it the process is presumed dead and the payment is the reconciler's, and the duplicate is told
   * it is pending (retry later) rather than held, by chance, through a takeover.
   */
  private async outcomeOf(found: PaymentRecord): Promise<PaymentRecord | null> {
    let record: PaymentRecord | null = found;
    // The last read comes no later than the deadline, so never after a takeover (which waits for it).
    const deadline = found.createdAt + this.settlingDeadlineMs;
    while (record?.state === "settling" && Date.now() < deadline) {
      const wait = Math.min(SETTLING_POLL_MS, deadline - Date.now());
      await new Promise((r) => setTimeout(r, wait));
      record = await this.services.store.getPayment(found.id);
    }
    return record;
  }

  /**
   * A paid call, under a key the client chose, that already has a payment of another
   * authorization (its process died before answering, or its call failed and was refunded, and
   * the client paid again under the same key): that payment pays for the call, and the
   * authorization presented is never settled. Only for the same call (tool and body) the payment
   * was made for: under the key, another call is the client's conflict (409, as the key's own
   * idempotency record answers while it lives), never a call run on another call's payment.
   * Settling → wait for it; settled → the call runs (or replays) on its credit; pending, or
   * released meanwhile → 503, and the retry settles whichever the call still needs.
   */
  private async answerForCall(
    found: PaymentRecord,
    context: KnownContext,
  ): Promise<AcceptedPayment> {
    // Only a call under a key its client chose comes here, so the request has its call.
    const call = context.request.call!;
    if (found.call?.fingerprint !== call.fingerprint) throw call.conflict();
    const record = await this.outcomeOf(found);
    if (record?.state !== "settled") throw pending();
    return this.accepted(record, context.network);
  }

  /**
   * Credits a settled payment to its account (and applies its plan), once: the payment id is the
   * idempotency key. The record is then kept for the retention window (or until the authorization
   * expires, if later) and forgotten. A pay-per-call payment's credit is spent by the call it paid
   * for, so it neither re-arms the account's credit alerts nor moves their reference level.
   */
  async credit(record: PaymentRecord): Promise<PaymentRecord> {
    const { saved, recorded } = await this.creditThenRecord(record);
    await recorded;
    return saved;
  }

  /** `credit`, answered once the credit is made, with the record's save as `recorded` (still on its way). */
  private async creditThenRecord(
    record: PaymentRecord,
  ): Promise<{ saved: PaymentRecord; recorded: Promise<void> }> {
    if (record.facilitatorFee !== undefined)
      return { saved: await this.chargeFacilitatorFee(record), recorded: Promise.resolve() };
    const amount = BigInt(record.value);
    const { grant } = record;
    const event = eventRecord(newEventId(), "payment.received", record.accountId, {
      type: grant.type,
      credits_added: grant.credits,
      amount_usd: formatUsd(amount),
      plan: grant.plan,
      agent_id: record.accountId,
      payment_session_id: record.id,
      amount_usdc_atomic: amount.toString(),
      network: record.network,
      transaction: record.txHash ?? undefined,
    });
    const credited = await this.services.store.topUp(
      record.accountId,
      "purchase",
      {
        amount: grant.credits,
        requestId: `x402:${record.id}`,
        reason: `x402 payment ${record.txHash} (${grant.description})`,
        rearm: !record.call,
      },
      [event],
      grant.planChange ?? undefined,
    );
    // A plan's type is decided by the credit itself (plans bought at once: one starts it, the
    // others renew it), and kept with the record for the answer and the books.
    const type = credited?.planType ?? grant.type;
    const saved = {
      ...record,
      grant: { ...grant, type },
      expiresAt: record.expiresAt ?? this.retainUntil(record),
    };
    const recorded = this.services.store.savePayment(saved);
    recorded.catch(() => {}); // awaited by whoever takes it
    this.services.books?.recordPayment({
      id: record.id,
      accountId: record.accountId,
      network: record.network,
      payer: record.payer,
      valueAtomic: amount.toString(),
      credits: grant.credits,
      type,
      plan: grant.plan,
      txHash: record.txHash,
      settledAt: Date.now(),
    });
    return { saved, recorded };
  }

  /**
   * A facilitator settlement's fee, debited once its payment is claimed and before the money
   * moves: settlements sent at once cannot all pass on one balance that covers one fee. Refused
   * (402 `insufficient_credits`), the claim is released and nothing moves.
   */
  private async reserveFee(record: PaymentRecord): Promise<void> {
    const fee = record.facilitatorFee!;
    let outcome: AdmitOutcome;
    try {
      outcome = await this.debitFee(record);
    } catch (err) {
      // The debit may have been made unheard: released (and given back) now. Should that fail too,
      // the reconciler finishes it: a release whose fee was given back, or the settlement with its
      // fee debited under this claim's request id, once (settleAbandoned).
      await this.release(record).catch(() => undefined);
      throw err;
    }
    if (outcome.status === "ok") return;
    await this.release(record);
    // The key revoked or expired since the request was admitted: that refusal, as at the door.
    if (outcome.status !== "insufficient_credits") admitted(outcome);
    const balance = "account" in outcome ? outcome.account.balance : 0;
    throw new ApiError(
      "insufficient_credits",
      `Not enough credits for the facilitator fee of ${fee}: the balance is ${balance}.`,
      { details: { credits_remaining: balance } },
    );
  }

  /**
   * A facilitator settlement's fee debited under its claim's request id, as the key that asked for
   * it: once per claim whoever asks (a debit already made under that id is not made again, nor one
   * refunded since).
   */
  private debitFee(
    record: PaymentRecord,
    keyHash: string | null = record.feeKeyHash ?? null,
  ): Promise<AdmitOutcome> {
    return this.services.store.admit({
      accountId: record.accountId,
      keyHash,
      cost: record.facilitatorFee!,
      requestId: record.feeRequestId!,
      tool: null,
      reason: "facilitator_settle",
      countRequest: false,
    });
  }

  /**
   * Lets go of a claimed payment whose money did not move, so its authorization may be tried
   * again; a facilitator fee reserved for it is given back first (once: a crash in between leaves
   * the record open, and the reconciler releases it later the same way).
   */
  async release(record: PaymentRecord): Promise<void> {
    if (record.feeRequestId) {
      const refunded = await this.services.store.refund(record.accountId, {
        requestId: record.feeRequestId,
        reason: "facilitator settlement not made",
        keyHash: record.feeKeyHash ?? null,
      });
      if (refunded.status === "refunded")
        this.services.metrics.creditsRefunded.inc(refunded.amount);
    }
    await this.services.store.releasePayment(record.id);
  }

  /**
   * A facilitator settlement pays the caller's own address; Toolgate charges the caller its fee,
   * reserved before the money moved. A record of an older version was not: its fee is charged
   * now, once per payment (the payment id is the ledger request id), whoever finishes the
   * settlement; a balance spent in between leaves it uncollected (logged), never negative.
   */
  private async chargeFacilitatorFee(record: PaymentRecord): Promise<PaymentRecord> {
    const fee = record.feeRequestId ? 0 : (record.facilitatorFee ?? 0);
    if (fee > 0) {
      const outcome = await this.services.store.admit({
        accountId: record.accountId,
        keyHash: null,
        cost: fee,
        requestId: facilitatorFeeRequestId(record.id),
        tool: null,
        reason: "facilitator_settle",
        countRequest: false,
      });
      if (outcome.status !== "ok")
        this.services.log.warn(
          { payment: record.id, account: record.accountId, outcome: outcome.status },
          "facilitator fee not collected",
        );
    }
    const saved = { ...record, expiresAt: record.expiresAt ?? this.retainUntil(record) };
    await this.services.store.savePayment(saved);
    return saved;
  }

  /** Until when a settled payment is remembered: the retention window, or the authorization's expiry if later. */
  private retainUntil(record: PaymentRecord): number {
    const validBeforeMs = Number(record.authorization.validBefore ?? 0) * 1000;
    return Math.max(
      Date.now() + this.config.retentionSeconds * 1000,
      Number.isFinite(validBeforeMs) ? validBeforeMs : 0,
    );
  }
}

interface KnownContext {
  request: PaymentRequest;
  auth: Authorization;
  payer: Address;
  network: string;
}

/** Whether a stored authorization is the presented one: every field, hex compared as bytes. */
function sameAuthorization(stored: Record<string, string>, presented: Authorization): boolean {
  return (
    sameBytes(stored.from ?? "", presented.from) &&
    sameBytes(stored.to ?? "", presented.to) &&
    sameBytes(stored.nonce ?? "", presented.nonce) &&
    sameUint(stored.value, presented.value) &&
    sameUint(stored.validAfter, presented.validAfter) &&
    sameUint(stored.validBefore, presented.validBefore)
  );
}

/** Two decimal uint256s as numbers (a record of an older version may spell one with leading zeros). */
function sameUint(stored: string | undefined, presented: string): boolean {
  return stored !== undefined && /^\d+$/.test(stored) && BigInt(stored) === BigInt(presented);
}

/** A v2 `accepted` against an offered requirement: every field equal, amounts as numbers, addresses as bytes. */
function sameRequirement(offered: RequirementsV2, accepted: RequirementsV2): boolean {
  return (
    offered.scheme === accepted.scheme &&
    offered.network === accepted.network &&
    BigInt(offered.amount) === BigInt(accepted.amount) &&
    sameBytes(offered.asset, accepted.asset) &&
    sameBytes(offered.payTo, accepted.payTo) &&
    offered.maxTimeoutSeconds === accepted.maxTimeoutSeconds &&
    sortedJson(offered.extra) === sortedJson(accepted.extra)
  );
}

const sortedJson = (value: Record<string, unknown>) =>
  JSON.stringify(Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b))));

const SETTLING_POLL_MS = 50;

const pending = () =>
  new ApiError(
    "payment_pending",
    "The payment is being settled on chain; its outcome is not known yet. Do not pay again: retry this request later with the same payment.",
    {
      headers: { "Retry-After": "10" },
    },
  );

/** A payment's call runs under a key its client chose (Idempotency-Key, payment identifier), not the payment's own. */
const isKeyedByClient = (record: PaymentRecord): boolean =>
  !!record.call && record.call.key !== paymentCallKey(record.id);

/**
 * No relayer key could send the settlement (none has ETH for gas, the chain refused the fees):
 * the gateway's trouble, not the payment's. Nothing was sent or charged, the payment is released,
 * and the same payment is taken again once a key can send (funding a key takes the operator
 * minutes, hence a longer wait than an RPC's hiccup).
 */
const relayersUnavailable = (network: string) =>
  new ApiError(
    "chain_unavailable",
    `The gateway cannot send settlements on ${network} right now; nothing was charged. Retry later with the same payment.`,
    { headers: { "Retry-After": "30" } },
  );
