import type { TierName } from "../accounts/tiers.js";
import type { EventRecord } from "../events/types.js";
import type { AccountStore } from "./accounts/index.js";
import type { KeyStore } from "./keys/index.js";
import type { CreditStore } from "./credits/index.js";
import type { LedgerStore } from "./ledger/index.js";
import type { RateLimiter } from "./rate-limits/index.js";
import type { Outbox } from "./outbox/index.js";
import type { IdempotencyStore } from "./idempotency/index.js";
import type { CustomToolStore } from "./custom-tools/index.js";
import type { WebhookStore } from "./webhooks/index.js";
import type { PaymentStore } from "./payments/index.js";
import type { OpenChargeStore } from "./open-charges/index.js";
import type { SingleUseStore } from "./single-use/index.js";
import type { SsoStore } from "./sso/index.js";
import type { SessionStore } from "./sessions/index.js";

/**
 * The one small storage interface. Two implementations honour it — Redis (shared by every
 * gateway process; atomic Lua scripts; all keys of an account share the hash tag `{acct_…}`)
 * and in-memory (development, single process) — and one contract suite tests both
 * (test/integration/store-contract.test.ts).
 *
 * Every operation that moves credits is atomic and idempotent per request id, and decides
 * the credit alerts it causes in the same step (decisions.md D5).
 */
export interface AccountRecord {
  id: string;
  email: string | null;
  emailVerified: boolean;
  tier: TierName;
  balance: number;
  /** The balance right after the last top-up; `credits.low` fires below 20% of it. */
  reference: number;
  createdAt: number;
  /** When the next Free monthly allowance top-up is due (epoch ms); 0 = none scheduled. */
  allowanceAt: number;
  /** When a paid plan's period ends unpaid and the tier falls back to Free (epoch ms); 0 = no end (Free, or set by an operator). */
  planExpiresAt: number;
  /**
   * Business: the origin of the account's own tool workers (an operator binds it), or null. Read
   * with the account in the admission's one round trip, so routing to it costs nothing extra.
   */
  dedicatedWorkersUrl: string | null;
  /**
   * The account's spend alert (docs/decisions.md, "Account controls"): `spend.threshold_reached`
   * fires once per calendar month (UTC) when the month's spend reaches `credits`. null: none set.
   */
  spendAlert: { credits: number } | null;
  /** Credits kept by debits (net of refunds) in the current spend month, and when it began (epoch ms). */
  spend: { windowStart: number; credits: number };
}

/** A plan bought with a payment: the tier, for a period (extending the current one on renewal). */
export interface PlanChange {
  tier: string;
  periodMs: number;
}

/**
 * What a plan's payment did, as `payment.received` names it: started the plan (`subscription`),
 * extended its period (`renewal`), or — the account holding a higher tier, or this one without an
 * end date — added only the credits (`one_time`). See planOutcome in src/credits/rules.ts.
 */
export type PlanType = "subscription" | "renewal" | "one_time";

export interface KeyRecord {
  id: string;
  accountId: string;
  /** SHA-256 of the key; never leaves the store layer's callers in a response. */
  hash: string;
  prefix: string;
  last4: string;
  name: string | null;
  createdAt: number;
  /** Epoch ms from which the key no longer works (may lie in the future: rotation grace). */
  revokedAt: number | null;
  /** The id of the key that replaced it, once a rotation scheduled its revocation. */
  replacedBy?: string | null;
  /**
   * When the key last passed an admission (epoch ms), to `KEY_USE_RESOLUTION_MS`: written by the
   * admission itself at most once per resolution window, so it costs no extra round trip. Set by
   * the store; null until first used.
   */
  lastUsedAt?: number | null;
  /** Account controls (docs/decisions.md, "Account controls"); absent on records older than them = none. */
  /** Epoch ms from which the key is refused as expired (null: never). */
  expiresAt?: number | null;
  /** Canonical names of the only tools the key may call (null: every tool). */
  allowedTools?: string[] | null;
  /** The key's own credit budget per UTC day or calendar month (null: none). */
  budget?: KeyBudget | null;
  /** Set by `listKeys`: credits the key's calls kept in its current budget window (0 without a budget). */
  budgetSpent?: number;
}

export type ControlPeriod = "day" | "month";
export interface KeyBudget {
  credits: number;
  period: ControlPeriod;
}

/** What `updateKey` changes: a field given replaces the stored one (null clears it); one left out stays. */
export interface KeyUpdate {
  name?: string | null;
  expiresAt?: number | null;
  allowedTools?: string[] | null;
  budget?: KeyBudget | null;
}

/** The key with its controls spelled out (null = none), as stores hand keys out. */
export const withControls = <K extends KeyRecord>(key: K): K => ({
  ...key,
  expiresAt: key.expiresAt ?? null,
  allowedTools: key.allowedTools ?? null,
  budget: key.budget ?? null,
});

/** A key is revoked once its revocation time has come (a rotation's grace may still run: not yet). */
export const isRevoked = (key: Pick<KeyRecord, "revokedAt">, now = Date.now()) =>
  key.revokedAt !== null && key.revokedAt <= now;

/** A key has expired once its expiry (an account control) has come: it works no more. */
export const isExpired = <K extends Pick<KeyRecord, "expiresAt">>(
  key: K,
  now = Date.now(),
): key is K & { expiresAt: number } => key.expiresAt != null && key.expiresAt <= now;

/** A key is limited when any control is set: it calls tools within them and manages nothing. */
export const isLimitedKey = (key: Pick<KeyRecord, "expiresAt" | "allowedTools" | "budget">) =>
  (key.expiresAt ?? null) !== null ||
  (key.allowedTools ?? null) !== null ||
  (key.budget ?? null) !== null;

/**
 * An active key, in the sense of the `last_active_key` guard: one that keeps its account
 * manageable — no revocation scheduled (a key in its rotation grace stops working soon) and no
 * account controls (a limited key manages no keys; an expiry is a control, so an active key never
 * lapses either). The Redis store's scripts mirror it (prelude.lua, `active_key`).
 */
export const isActiveKey = (key: KeyRecord) => key.revokedAt === null && !isLimitedKey(key);

/**
 * Whether `key` is the account's last active key (`keys`: all the account's keys): revoking it,
 * or setting a control on it, would leave no key that can manage the account's keys.
 */
export const isLastActiveKey = (keys: Iterable<KeyRecord>, key: KeyRecord) =>
  isActiveKey(key) && ![...keys].some((other) => other.id !== key.id && isActiveKey(other));

/**
 * What changing a key did. `last_active_key`: refused, the change would limit the account's last
 * active key (isLastActiveKey).
 */
export type UpdateKeyOutcome =
  | { status: "updated"; key: KeyRecord }
  | { status: "last_active_key"; key: KeyRecord }
  | { status: "not_found" };

/**
 * What revoking a key did. `last_active_key`: refused, the account would have no active key left
 * (isLastActiveKey).
 * `already_rotated`: a rotation refused, the key's revocation being scheduled already (by another).
 */
export type RevokeOutcome =
  | { status: "revoked"; key: KeyRecord }
  | { status: "already_revoked"; key: KeyRecord }
  | { status: "already_rotated"; key: KeyRecord }
  | { status: "last_active_key"; key: KeyRecord }
  | { status: "not_found" };

export const LEDGER_KINDS = ["grant", "purchase", "allowance", "debit", "refund"] as const;
export type LedgerKind = (typeof LEDGER_KINDS)[number];
export type TopUpKind = "grant" | "purchase" | "allowance";

export interface LedgerEntry {
  id: string;
  at: number;
  kind: LedgerKind;
  /** Signed: debits are negative. */
  amount: number;
  balance: number;
  reason: string;
  requestId: string;
  tool: string | null;
  /** The API key whose call made the entry (debits, and the refunds that return them); null otherwise. */
  keyId: string | null;
}

/** An account whose ledger holds entries not yet exported to the books, and the oldest one's time. */
export interface LedgerBacklog {
  accountId: string;
  oldestAt: number;
}

export interface RateState {
  limit: number;
  remaining: number;
  /** Milliseconds until the window frees a slot. */
  resetMs: number;
}

export interface AdmitRequest {
  accountId: string;
  /** Hash of the presented API key; null when the caller is identified otherwise (a wallet payment). */
  keyHash: string | null;
  /** Credits to debit; 0 = authenticate and count against the rate limit only. */
  cost: number;
  requestId: string;
  /** The tool called: a key limited to named tools is refused any other, even when nothing is charged. */
  tool: string | null;
  reason: string;
  /**
   * false: do not count a request against the rate limit (a door that counted it already, or a
   * pre-check). Default true.
   */
  countRequest?: boolean;
  /** How many requests this admission counts (an MCP JSON-RPC batch counts each message); all or none are admitted. Default 1. */
  requests?: number;
  /**
   * Check only, debit nothing: the key and its controls for `cost` (its budget included) and the
   * rate limit, whatever the balance — a keyed call about to bring its own credits (an x402
   * payment), refused before the payment is taken. Answers "ok" uncharged.
   */
  checkOnly?: boolean;
  /**
   * A keyed x402 call's hold on its key's budget, named by the request id of its check: the check
   * (`checkOnly`) holds `cost` in the key's budget under it, for BUDGET_HOLD_MS at the most, and
   * the call's debit takes the hold's place, so calls checked side by side cannot all pass and
   * then be refused after paying. Ignored for a key without a budget.
   */
  budgetHold?: string;
}

/** How long a keyed x402 call's budget hold outlives its check at the most (a process that died mid-payment). */
export const BUDGET_HOLD_MS = 5 * 60_000;

export type AdmitOutcome =
  | {
      status: "ok";
      account: AccountRecord;
      keyId: string | null;
      /** The key has account controls (expiry, tools, budget): it may not manage keys or controls. */
      keyLimited: boolean;
      rate: RateState;
      charged: boolean;
      events: EventRecord[];
      /** A check held the call's cost in the key's budget (AdmitRequest.budgetHold). */
      budgetHeld?: boolean;
      /** The request id's debit was made and refunded since: nothing charged now (an admission never debits one request id twice). */
      refunded?: boolean;
    }
  | { status: "invalid_key" }
  | { status: "revoked" }
  | { status: "expired"; expiresAt: number }
  | { status: "tool_not_allowed"; allowedTools: string[] }
  | { status: "key_budget_exceeded"; account: AccountRecord; rate: RateState; budget: BudgetState }
  | { status: "rate_limited"; account: AccountRecord; rate: RateState }
  | { status: "insufficient_credits"; account: AccountRecord; rate: RateState };

/** A key's budget as an admission saw it. */
export interface BudgetState extends KeyBudget {
  spent: number;
  /** When the current window began and when the next one begins (epoch ms). */
  windowStart: number;
  resetsAt: number;
}

export interface CreditChange {
  requestId: string;
  reason: string;
}

export interface RefundChange extends CreditChange {
  idempotencyKey?: string | null;
  /**
   * The refunded call's tool and the hash of the key that made it: the refund's ledger entry names
   * them, and the key's budget gets the credits back. A debit made under an Idempotency-Key names
   * its own key (another key of the account may have taken the call over): that one wins.
   */
  tool?: string | null;
  keyHash?: string | null;
  /** The failed call's answer, for the requests waiting on its Idempotency-Key (FAILED_ANSWER_MS). */
  failure?: FailedAnswer;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** A page cursor this store never handed out (malformed, or naming nothing): never "start again from the top". */
export class InvalidCursorError extends Error {}

/** Ledger entry ids (and so ledger cursors) are `<ms>-<sequence>`, each part a 64-bit unsigned integer, as Redis stream ids are. */
export function isLedgerId(id: string): boolean {
  const match = /^(\d{1,20})-(\d{1,20})$/.exec(id);
  return match !== null && BigInt(match[1]!) < 2n ** 64n && BigInt(match[2]!) < 2n ** 64n;
}

/**
 * A ledger page's cursor, if any, is a ledger id with something before it: else
 * InvalidCursorError. `0-0` is the first id there can be, so nothing is older (Redis refuses
 * "(0-0" as a range's end; the memory store answers the same).
 */
export function checkLedgerCursor(cursor: string | undefined): void {
  if (cursor !== undefined && (!isLedgerId(cursor) || /^0+-0+$/.test(cursor)))
    throw new InvalidCursorError(`not a ledger id with entries before it: ${cursor}`);
}

export interface NewAccount {
  id: string;
  email: string | null;
  tier: TierName;
}

/**
 * The whole store, one interface per concern, each in its own folder with its two
 * implementations beside it: `<concern>/index.ts` (the interface), `<concern>/redis.ts` (Redis, the
 * money rules in credits/lua/*.lua) and `<concern>/memory.ts` (the embedded mode; decisions.md
 * "Storage" says why it is a TypeScript twin). redis.ts and memory.ts compose the parts into one
 * Store. A part that needs one concern may take just that interface.
 */
export interface Store
  extends AccountStore,
    KeyStore,
    CreditStore,
    LedgerStore,
    RateLimiter,
    Outbox,
    IdempotencyStore,
    CustomToolStore,
    WebhookStore,
    PaymentStore,
    SingleUseStore,
    OpenChargeStore,
    SsoStore,
    SessionStore {
  ping(): Promise<void>;
  close(): Promise<void>;
  /**
   * Requests sent to the store so far (a command, a script, or a MULTI block: each one answer
   * awaited): the metric `toolgate_store_requests_total`, and the paid-call bench's count per call.
   */
  requestsSent(): number;
}

/** A Business account's private tool at its own endpoint, as stored (see src/tools/custom/spec.ts). */
export interface CustomToolRecord {
  accountId: string;
  name: string;
  title: string;
  description: string;
  url: string;
  inputSchema: Record<string, unknown>;
  outputSchema: Record<string, unknown>;
  priceCredits: number;
  timeoutMs: number;
  createdAt: number;
  /**
   * The secret calls to the endpoint are signed with (Standard Webhooks headers), sealed as a
   * webhook's is; shown once, at registration. Absent on tools registered before calls were signed.
   */
  sealedSecret?: string;
}

/** A server-side dashboard session. `id` is the SHA-256 (hex) of the cookie's secret, never the secret. */
export interface SessionRecord {
  id: string;
  accountId: string;
  /** Sent back on every state-changing request (header or form field); compared in constant time. */
  csrfToken: string;
  createdAt: number;
  /** Absolute expiry (epoch ms), whatever the activity. */
  expiresAt: number;
  /** How the session was opened. */
  via: "api_key" | "email_link" | "wallet" | "sso";
  /**
   * The key a session `via` "api_key" was opened with: the session lasts only while that key
   * could open it (not revoked, no controls; session.ts checks it at every use).
   */
  keyId?: string;
  /**
   * When the single sign-on connection a session `via` "sso" was opened under was set up (its
   * `createdAt`, kept through changes to it): the session lasts only while that connection is the
   * account's, not removed nor set up anew (session.ts checks it at every use).
   */
  ssoConnectionAt?: number;
}

/** A Business account's OpenID Connect provider, as stored (see src/accounts/sso/connection.ts). */
export interface SsoConnectionRecord {
  accountId: string;
  /** The provider's issuer identifier (an https URL; discovery at `/.well-known/openid-configuration` under it). */
  issuer: string;
  clientId: string;
  /** The client secret, sealed with SECRET_KEY (AES-256-GCM): never returned by the API. */
  sealedClientSecret: string;
  /** Lower-case e-mail domains whose addresses may sign in; each is this account's alone. */
  emailDomains: string[];
  createdAt: number;
  updatedAt: number;
}

/**
 * A connection to save: `sealedClientSecret` null keeps the stored one (a change that leaves the
 * secret out); `createdAt` is the stored connection's when there is one.
 */
export type SsoConnectionChange = Omit<SsoConnectionRecord, "sealedClientSecret"> & {
  sealedClientSecret: string | null;
};

export interface LedgerFollower {
  /** Entries newer than `afterId` (oldest first), waiting up to `waitMs` for the first; [] on timeout. */
  next(afterId: string, waitMs: number): Promise<LedgerEntry[]>;
  close(): Promise<void>;
}

/** A webhook; `ownerId` is an account id, or "platform" for the operator's webhooks. */
export interface WebhookRecord {
  id: string;
  ownerId: string;
  url: string;
  events: string[];
  createdAt: number;
  /** The signing secret, sealed (encrypted) by the webhooks module. */
  sealedSecret: string;
  /** During a rotation's overlap: the previous secret and when it stops signing. */
  previousSealedSecret: string | null;
  previousSecretExpiresAt: number | null;
}

export interface DeliveryAttempt {
  eventId: string;
  event: string;
  attempt: number;
  at: number;
  /** The receiver's HTTP status; null when there was no answer. */
  status: number | null;
  durationMs: number;
  outcome: "delivered" | "retrying" | "failed";
  error: string | null;
  nextAttemptAt: number | null;
  /** The exact body sent, kept for a manual resend. */
  body: string;
}

export interface PaymentRecord {
  /** `<chain id>:<token>:<payer>:<nonce>`, lower-case. */
  id: string;
  network: string;
  payer: string;
  value: string;
  state: "settling" | "settled" | "pending";
  accountId: string;
  txHash: string | null;
  createdAt: number;
  /** What the pending settlement needs to be finished by the reconciler. */
  authorization: Record<string, string>;
  signature: string;
  /** What the payment buys, credited when it settles. */
  grant: PaymentGrant;
  /** The relayer transaction as sent (nonce, fees, calldata), to replace it if it gets stuck. */
  relay?: RelayedTransaction | null;
  /** The paid resource's URL: the payment answers requests for this resource only. */
  resource?: string;
  /** For a paid tool call: the idempotency key its call runs under, and the call's fingerprint (tool + body). */
  call?: { key: string; fingerprint: string } | null;
  /** The chain block seen just before the settlement was sent: the reconciler reads logs from here. */
  sentFromBlock?: string | null;
  /** When a settled record is forgotten (ms since the epoch); open records never expire. */
  expiresAt?: number;
  /** Who is paid, when not X402_PAY_TO: a facilitator settlement pays the resource server's address. */
  payTo?: string;
  /** A facilitator settlement: the credits charged to `accountId` for it (instead of a credit). */
  facilitatorFee?: number;
  /**
   * The ledger request id the facilitator fee was debited under, once the payment was claimed and
   * before any money moved; given back if the settlement is not made. Absent in records of older
   * versions, which charged the fee on settlement.
   */
  feeRequestId?: string;
  /**
   * The hash of the API key that asked for the facilitator settlement: the fee's debit, and a
   * refund of it, name that key in the ledger (and so in usage by key). Absent in records of older
   * versions.
   */
  feeKeyHash?: string;
}

export interface RelayedTransaction {
  /** The relayer that sent it (one of a pool); absent in records of older versions: the first relayer. */
  from?: string;
  nonce: number;
  /** Where it was sent: the token, or Multicall3 for a batch; absent in records of older versions: the token. */
  to?: string;
  /** The latest validBefore of the authorizations it carries: once block time passes it, none can happen. */
  validBefore?: string;
  gas: string;
  maxFeePerGas: string;
  maxPriorityFeePerGas: string;
  data: string;
  sentAt: number;
}

export interface PaymentGrant {
  credits: number;
  type: "one_time" | "subscription" | "renewal";
  plan: string | null;
  planChange: PlanChange | null;
  description: string;
}

export interface StoredResponse {
  status: number;
  body: string;
  headers: Record<string, string>;
}

export interface IdempotencyClaim {
  /** Tool and body: the same key with another request is a conflict. */
  fingerprint: string;
  requestId: string;
  leaseMs: number;
  ttlSeconds: number;
  /**
   * The request id this request has been waiting on (the holder an `in_progress` answer named):
   * if that execution failed, this request is told its failure rather than running the call again.
   */
  awaiting?: string;
}

/** A failed execution's answer, kept briefly for the requests that waited on it (`FAILED_ANSWER_MS`). */
export interface FailedAnswer {
  code: string;
  message: string;
  param?: string;
  retryAfter?: string;
}

/**
 * How long a failed execution's answer is kept for the requests waiting on it, which look every
 * 25 ms: a request arriving afterwards (a retry) runs the call again, as the refund freed the key.
 */
export const FAILED_ANSWER_MS = 10_000;

export type IdempotencyState =
  | { state: "started"; requestId: string }
  | { state: "in_progress"; requestId: string }
  | { state: "conflict" }
  | { state: "completed"; response: StoredResponse }
  /** Served and charged, but its answer was not kept: the account's kept answers were at their limit. */
  | { state: "not_kept" }
  | { state: "failed"; failure: FailedAnswer };

/** How a served call's answer is kept for its Idempotency-Key. */
export interface KeptAnswer {
  ttlSeconds: number;
  /**
   * The most bytes of answers the account may have kept at once (IDEMPOTENCY_KEPT_BYTES): an
   * answer that would pass it is not kept, and a retry with its key is told so.
   */
  accountLimitBytes: number;
}

/**
 * A call's admission under its Idempotency-Key: the claim, and — when this request now holds the
 * claim under its own request id — the admission made in the same step (refused: the key is free
 * again). `admitted` is null for any other claim, a takeover under another request id included.
 */
export interface IdempotentAdmission {
  claim: IdempotencyState;
  admitted: AdmitOutcome | null;
}

/** The per-tier numbers a store needs; passed in, so the store never imports the tier table. */
export interface TierLimits {
  /**
   * `rank`: the tier's place in the tier order (Free 0 upwards): a plan never lowers it.
   * `priceCents`: its plan's price per period (0: not sold as a plan), for the time an upgrade carries over.
   * `countsMessages`: whether an admission of several messages (`requests`: an MCP batch) counts
   * each. Only a tier that may use MCP: one that may not is refused the batch (403), which is one
   * request, not the batch's whole count against its limit.
   */
  [tier: string]: {
    requestsPerMinute: number;
    monthlyAllowance: number;
    rank: number;
    priceCents: number;
    countsMessages: boolean;
  };
}

export const RATE_WINDOW_MS = 60_000;

/**
 * The windows of key budgets and of the spend alert: a UTC day, and a calendar month (UTC) when
 * `monthMs` is 0. A store given other lengths uses epoch-aligned windows of those lengths (tests
 * watch a window reset in milliseconds).
 */
export interface ControlWindows {
  dayMs: number;
  monthMs: number;
}
export const CALENDAR_WINDOWS: ControlWindows = { dayMs: 86_400_000, monthMs: 0 };

/** The start of the window holding `at`, and the start of the next one (epoch ms). */
export function controlWindow(
  at: number,
  period: ControlPeriod,
  windows: ControlWindows,
): { start: number; next: number } {
  const length = period === "day" ? windows.dayMs : windows.monthMs;
  if (length > 0) {
    const start = Math.floor(at / length) * length;
    return { start, next: start + length };
  }
  const d = new Date(at);
  return {
    start: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1),
    next: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1),
  };
}
/** `lastUsedAt` granularity: an admission rewrites it only when the stored value is this much older. */
export const KEY_USE_RESOLUTION_MS = 60_000;
/**
 * How long a debit's (or grant's) record is kept: what its one refund and an `Idempotency-Key`
 * retry need. A call's refund happens within the call, or within five minutes when the store was
 * failing (src/tools/invoke.ts); a retry takes over a claim once its lease ran out, while its
 * Idempotency-Key lives (24 h by default). A call's record (its request id minted by
 * newRequestId) is kept with its 30-second slot's records for this long after the slot, plus an
 * hour (src/store/credits/redis.ts, debitRecord); the ledger entry itself lives on in the books.
 */
export const OPERATION_TTL_SECONDS = 24 * 3600;
