import { getAddress, type Address, type Hex } from "viem";
import type { Config } from "../config.js";
import { eventRecord } from "../events/types.js";
import { ApiError } from "../http/errors.js";
import { newEventId } from "../lib/ids.js";
import type { Services } from "../services.js";
import type { PaymentGrant, PaymentRecord } from "../store/types.js";
import { formatUsd } from "../tools/pricing.js";
import { createChainClients, type NetworkClients } from "./chain.js";
import type { Offer } from "./offer.js";
import { RELAYER_BUSY, settle } from "./settle.js";
import { invalidPayment, normaliseSignature, verifyAuthorization } from "./verify.js";
import { ensureWalletAccount } from "./wallet-accounts.js";
import type { PaymentHeader } from "./wire.js";

/**
 * Accepting an x402 payment, start to end: find the network → verify → claim the authorization
 * (once, across every process) → settle it on chain ourselves → credit the payer's wallet
 * account with `payment.received`, atomically and once. A call is then charged from those
 * credits like any other, so a failed call leaves the money there as credits (DESIGN D7).
 */
export interface AcceptedPayment {
  accountId: string;
  payer: Address;
  txHash: Hex;
  /** As the client named it: the v1 name or the v2 CAIP-2 id. */
  network: string;
}

export class Payments {
  readonly clients: Map<string, NetworkClients>;

  /**
   * The longest a live process can take to settle (the relayer lock, four RPC calls, the
   * receipt wait); a "settling" record older than this was left by a process that died.
   */
  readonly settlingDeadlineMs: number;

  constructor(
    private readonly services: Services,
    readonly config: NonNullable<Config["x402"]>,
  ) {
    this.clients = createChainClients(config);
    this.settlingDeadlineMs = RELAYER_LOCK_WAIT_MS + 4 * config.rpcTimeoutMs + config.receiptTimeoutMs;
  }

  private networkOf(header: PaymentHeader, offer: Offer): NetworkClients {
    if (header.version === 1) {
      if (header.scheme !== "exact") throw invalidPayment("only the exact scheme is accepted");
      const clients = this.clients.get(header.network);
      if (!clients || clients.network.name !== header.network) throw invalidPayment(`the network ${header.network} is not accepted here`);
      return clients;
    }
    // v2: the requirement the client accepted must be, field for field, one that was offered.
    const offered = offer.v2.accepts.find((r) => canonical(r) === canonical(header.accepted));
    if (!offered) throw invalidPayment("the accepted requirement is not one this resource offers (network, asset, amount or recipient differ)");
    return this.clients.get(offered.network)!;
  }

  /** `beneficiary`: the account credited (a keyed buyer); default: the paying wallet's own account. */
  async accept(header: PaymentHeader, offer: Offer, priceAtomic: bigint, grant: PaymentGrant, beneficiary?: string): Promise<AcceptedPayment> {
    const clients = this.networkOf(header, offer);
    const { network } = clients;
    const auth = header.authorization;
    const signature = normaliseSignature(header.signature);
    const payer = getAddress(auth.from);
    const id = `${network.chainId}:${network.usdc.address}:${payer}:${auth.nonce}`.toLowerCase();
    const networkName = header.version === 1 ? network.name : network.caip2;

    // A payment seen before is answered from its record, without asking the chain again.
    const known = await this.services.store.getPayment(id);
    if (known) return this.answerKnown(known, payer, networkName);

    try {
      await verifyAuthorization(clients, auth, signature, { payTo: this.config.payTo, price: priceAtomic });
    } catch (err) {
      if (err instanceof ApiError) {
        // The same authorization, sent twice at once, may have been claimed and settled by the
        // other request while this one was reading the chain: its record, not the chain, answers.
        const claimed = await this.services.store.getPayment(id);
        if (claimed) return this.answerKnown(claimed, payer, networkName);
        this.services.metrics.payments.inc({ outcome: "rejected", network: network.name });
        throw err;
      }
      this.services.metrics.chainRpcErrors.inc({ network: network.name });
      throw new ApiError("chain_unavailable", `The ${network.name} RPC did not answer; nothing was charged. Retry shortly.`, { headers: { "Retry-After": "5" } });
    }

    const accountId = beneficiary ?? (await ensureWalletAccount(this.services, payer)).id;
    const record: PaymentRecord = {
      id,
      network: network.name,
      payer,
      value: auth.value,
      state: "settling",
      accountId,
      grant,
      txHash: null,
      createdAt: Date.now(),
      authorization: { ...auth },
      signature,
    };
    const existing = await this.services.store.claimPayment(record);
    if (existing) return this.answerKnown(existing, payer, networkName);

    const outcome = await settle(clients, auth, signature, this.config.payTo, this.config.receiptTimeoutMs, (name, fn) => this.withLock(name, fn));
    this.services.metrics.payments.inc({ outcome: outcome.state, network: network.name });
    if (outcome.state === "failed") {
      await this.services.store.releasePayment(id); // nothing moved: the authorization may be retried
      throw invalidPayment(`settlement failed: ${outcome.reason}`);
    }
    if (outcome.state === "pending") {
      await this.services.store.savePayment({ ...record, state: "pending", txHash: outcome.txHash ?? null, relay: outcome.relay ?? null });
      this.services.log.warn({ payment: id, reason: outcome.reason, tx: outcome.txHash }, "x402 settlement pending");
      throw pending();
    }
    // The call is claimed before the record says "settled", so a duplicate that then sees
    // "settled" cannot take the call this request paid for.
    await this.services.store.claimPaymentService(id);
    await this.credit({ ...record, state: "settled", txHash: outcome.txHash });
    return { accountId, payer, txHash: outcome.txHash, network: networkName };
  }

  /**
   * A payment already claimed: still settling or pending → pending; settled after an earlier
   * "pending" answer → the retry gets the one call it paid for; otherwise it is used up.
   */
  private async answerKnown(record: PaymentRecord, payer: Address, network: string): Promise<AcceptedPayment> {
    if (record.state === "pending") throw pending();
    if (record.state === "settled" && (await this.services.store.claimPaymentService(record.id))) {
      return { accountId: record.accountId, payer, txHash: record.txHash as Hex, network };
    }
    throw new ApiError("payment_already_used", "This payment authorization has already been used.");
  }

  /** Runs `fn` holding the store lock `name`, waiting up to RELAYER_LOCK_WAIT_MS for it. */
  private async withLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + RELAYER_LOCK_WAIT_MS;
    let token: string | null;
    while (!(token = await this.services.store.acquireLock(name, 15_000))) {
      if (Date.now() > deadline) throw new Error(RELAYER_BUSY);
      await new Promise((r) => setTimeout(r, 3));
    }
    try {
      return await fn();
    } finally {
      await this.services.store.releaseLock(name, token);
    }
  }

  /** Credits a settled payment to its account (and applies its plan), once: the payment id is the idempotency key. */
  async credit(record: PaymentRecord): Promise<void> {
    const amount = BigInt(record.value);
    const { grant } = record;
    const event = eventRecord(newEventId(), "payment.received", record.accountId, {
      type: grant.type,
      credits_added: grant.credits,
      amount_usd: centsOf(amount),
      plan: grant.plan,
      agent_id: record.accountId,
      payment_session_id: record.id,
      amount_usdc_atomic: amount.toString(),
      network: record.network,
      transaction: record.txHash ?? undefined,
    });
    await this.services.store.topUp(
      record.accountId,
      "purchase",
      { amount: grant.credits, requestId: `x402:${record.id}`, reason: `x402 payment ${record.txHash} (${grant.description})` },
      [event],
      grant.planChange ?? undefined,
    );
    await this.services.store.savePayment(record);
  }
}

const RELAYER_LOCK_WAIT_MS = 10_000;

const pending = () =>
  new ApiError("payment_pending", "The payment is being settled on chain; its outcome is not known yet. Do not pay again: retry this request later with the same payment.", {
    headers: { "Retry-After": "10" },
  });

/** Two decimals, as the event's amount_usd carries (rounded half up); the exact amount travels beside it. */
function centsOf(atomic: bigint): string {
  return formatUsd(((atomic + 5_000n) / 10_000n) * 10_000n);
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k.toLowerCase())}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  }
  return typeof value === "string" ? JSON.stringify(value.toLowerCase()) : JSON.stringify(value);
}
