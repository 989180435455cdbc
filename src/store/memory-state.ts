/**
 * What the in-memory parts of the store (`<concern>/memory.ts`) share: the accounts, each holding
 * its keys, ledger, debits and outbox as the Redis store keeps them under the account's hash tag;
 * the Idempotency-Key records (a refund forgets the call's); the clock; and the helpers that
 * move credits the way the Lua scripts do (src/credits/rules.ts).
 */
import { EventEmitter } from "node:events";
import { ExpiringMap } from "../lib/expiring-map.js";
import { type AlertState, applyTopUp, planInForce } from "../credits/rules.js";
import { type KeySpend, type SpendState, spentIn } from "../credits/controls.js";
import type { EventRecord } from "../events/types.js";
import {
  type AccountRecord,
  CALENDAR_WINDOWS,
  type ControlWindows,
  type CreditChange,
  type FailedAnswer,
  type KeyRecord,
  type LedgerEntry,
  type LedgerKind,
  OPERATION_TTL_SECONDS,
  type StoredResponse,
  type TierLimits,
  type TopUpKind,
} from "./types.js";

export interface MemAccount extends AccountRecord, AlertState, SpendState {
  lowArmed: boolean;
  depletedArmed: boolean;
  keysByHash: Map<string, KeyRecord>;
  keysById: Map<string, KeyRecord>;
  /** Requests admitted per second (the Redis store's window, src/credits/lua/prelude.lua rate_window). */
  rateWindow: Map<number, number>;
  ledger: LedgerEntry[];
  /**
   * Request id → the debit (its cost, and the key charged) while charged, "refunded" after:
   * idempotent debits, single refunds. Kept a day and an hour, as the Redis store keeps its debit
   * records (DEBIT_KEPT_MS).
   */
  debits: ExpiringMap<string, { cost: number; keyId: string | null } | "refunded">;
  /** Request ids of the grants applied, kept a day as in Redis (OPERATION_KEPT_MS): idempotent top-ups. */
  operations: ExpiringMap<string, true>;
  outbox: EventRecord[];
  /** Each budgeted key's spend today and this month (account controls). */
  keySpend: Map<string, KeySpend>;
  /** Credits held in a key's budget by keyed x402 calls checked but not yet debited, by hold id (AdmitRequest.budgetHold). */
  budgetHolds: Map<string, { keyId: string; credits: number; until: number }>;
}

/** How long a debit's record is kept: a day and an hour, as the Redis store keeps it (credits/redis.ts). */
export const DEBIT_KEPT_MS = (OPERATION_TTL_SECONDS + 3600) * 1000;
export const OPERATION_KEPT_MS = OPERATION_TTL_SECONDS * 1000;

export interface IdempotencyRecord {
  fingerprint: string;
  requestId: string;
  leaseUntil: number;
  response: StoredResponse | null;
  /** Served, but its answer was not kept (the account's kept answers were at their limit). */
  notKept?: boolean;
  /** Its execution failed (refunded): the answer, for the requests that waited on it. */
  failure?: FailedAnswer;
}

export interface MemoryStoreOptions {
  tiers: TierLimits;
  periodMs: number;
  /** The store's clock (tests move it). */
  now?: () => number;
  /** The windows of key budgets and the spend alert (default: UTC day, calendar month). */
  windows?: ControlWindows;
}

export class MemoryState {
  readonly accounts = new Map<string, MemAccount>();
  /** By `idempotencyId(account, key)`, each kept for its time to live. */
  readonly idempotency: ExpiringMap<string, IdempotencyRecord>;
  /** Each account's kept answers, in bytes, by the hour they expire (as Redis's `idem-bytes`). */
  readonly keptAnswerBytes = new Map<string, Map<number, number>>();
  /** Each account's event log, newest first (the outbox's; the ledger backlog looks at it too). */
  readonly eventLogs = new Map<string, EventRecord[]>();
  /** Emits an account id each time its ledger grows, for `followLedger`. */
  readonly ledgerGrew = new EventEmitter().setMaxListeners(0);
  readonly tiers: TierLimits;
  readonly periodMs: number;
  readonly now: () => number;
  readonly windows: ControlWindows;
  private ledgerSeq = 0;
  /**
   * The time part of the newest ledger id: ids never go back in time, as Redis's stream ids do
   * not. A clock stepped back (NTP) gave an entry an older id than the one before it, and a page
   * boundary between them skipped the entries in between.
   */
  private ledgerMs = 0;

  constructor(options: MemoryStoreOptions) {
    this.tiers = options.tiers;
    this.periodMs = options.periodMs;
    this.now = options.now ?? Date.now;
    this.windows = options.windows ?? CALENDAR_WINDOWS;
    this.idempotency = new ExpiringMap(this.now);
  }

  /** What the store answers of an account: a copy, its plan as it stands now (`planInForce`). */
  view(a: MemAccount): AccountRecord {
    return planInForce(this.storedView(a), this.now());
  }

  /** The account as stored: a copy, without the store's own bookkeeping. */
  private storedView(a: MemAccount): AccountRecord {
    const {
      id,
      email,
      emailVerified,
      tier,
      balance,
      reference,
      createdAt,
      allowanceAt,
      planExpiresAt,
      dedicatedWorkersUrl,
      spendAlert,
      spend,
    } = a;
    return {
      id,
      email,
      emailVerified,
      tier,
      balance,
      reference,
      createdAt,
      allowanceAt,
      planExpiresAt,
      dedicatedWorkersUrl,
      spendAlert: spendAlert ? { ...spendAlert } : null,
      spend: { ...spend },
    };
  }

  addLedger(
    a: MemAccount,
    kind: LedgerKind,
    amount: number,
    change: CreditChange,
    tool: string | null = null,
    keyId: string | null = null,
  ) {
    this.ledgerMs = Math.max(this.ledgerMs, this.now());
    a.ledger.push({
      id: `${this.ledgerMs}-${++this.ledgerSeq}`,
      at: this.now(),
      kind,
      amount,
      balance: a.balance,
      reason: change.reason,
      requestId: change.requestId,
      tool,
      keyId,
    });
    this.ledgerGrew.emit(a.id);
  }

  topUpAccount(
    a: MemAccount,
    kind: TopUpKind,
    amount: number,
    change: CreditChange & { rearm?: boolean },
  ) {
    applyTopUp(a, amount, change.rearm !== false);
    this.addLedger(a, kind, amount, change);
  }

  /** The key's spend in its current budget window (0 without a budget). */
  /** What keyed x402 calls hold in `keyId`'s budget (holds past their time are dropped). */
  budgetHeld(a: MemAccount, keyId: string): number {
    let held = 0;
    for (const [id, hold] of a.budgetHolds) {
      if (hold.until <= this.now()) a.budgetHolds.delete(id);
      else if (hold.keyId === keyId) held += hold.credits;
    }
    return held;
  }

  budgetSpent(a: MemAccount, key: KeyRecord): number {
    if (!key.budget) return 0;
    return spentIn(a.keySpend.get(key.id), key.budget.period, this.now(), this.windows);
  }
}

/** An Idempotency-Key record's id: the key is the account's own. */
export const idempotencyId = (accountId: string, key: string) => `${accountId}\0${key}`;
