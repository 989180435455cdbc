import type { TierName } from "../accounts/tiers.js";
import type { EventRecord } from "../events/types.js";

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

/** A key is limited when any control is set: it calls tools within them and manages nothing. */
export const isLimitedKey = (key: Pick<KeyRecord, "expiresAt" | "allowedTools" | "budget">) =>
  (key.expiresAt ?? null) !== null ||
  (key.allowedTools ?? null) !== null ||
  (key.budget ?? null) !== null;

/** What revoking a key did. `last_active_key`: refused, the account would have no working key left. */
export type RevokeOutcome =
  | { status: "revoked"; key: KeyRecord }
  | { status: "already_revoked"; key: KeyRecord }
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
}

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
  /** The refunded call's tool and the hash of the key that made it: the refund's ledger entry names them. */
  tool?: string | null;
  keyHash?: string | null;
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

export interface NewAccount {
  id: string;
  email: string | null;
  tier: TierName;
}

export interface Store {
  /** Creates the account with its first grant and events, atomically. */
  createAccount(
    account: NewAccount,
    grant: CreditChange & { amount: number },
    events: EventRecord[],
  ): Promise<AccountRecord>;
  getAccount(id: string): Promise<AccountRecord | null>;
  /** Oldest first. Throws InvalidCursorError for a cursor that is not an account id. */
  listAccounts(page: { cursor?: string; limit: number }): Promise<Page<AccountRecord>>;
  /** Claims an e-mail address for an account; false when another account holds it. */
  claimEmail(email: string, accountId: string): Promise<boolean>;
  setTier(accountId: string, tier: TierName): Promise<AccountRecord | null>;
  /** Binds the account to its own worker pool (`url`), or unbinds it (null); null when there is no such account. */
  setDedicatedWorkers(accountId: string, url: string | null): Promise<AccountRecord | null>;
  /** Marks the e-mail verified and grants `amount` once; starts the Free monthly allowance clock. */
  verifyEmail(
    accountId: string,
    grant: CreditChange & { amount: number },
  ): Promise<"verified" | "already_verified" | "not_found">;

  addKey(key: KeyRecord): Promise<void>;
  listKeys(accountId: string): Promise<KeyRecord[]>;
  /** Changes a key's name and controls; null when the account has no such key. */
  updateKey(accountId: string, keyId: string, update: KeyUpdate): Promise<KeyRecord | null>;
  /** Sets (or, with null, removes) the account's spend alert, re-arming it for this month; null when there is no such account. */
  setSpendAlert(
    accountId: string,
    alert: { credits: number } | null,
  ): Promise<AccountRecord | null>;
  /**
   * Revokes after `graceMs` of store time (0 = now); never postpones an earlier revocation. A key
   * already revoked is left as it is. With `keepOneActive`, refuses (atomically) to revoke the
   * account's last active key — one with no revocation scheduled.
   */
  revokeKey(
    accountId: string,
    keyId: string,
    graceMs: number,
    options?: { keepOneActive?: boolean },
  ): Promise<RevokeOutcome>;

  /** The hot path, one round trip: check the key, apply the Free allowance, rate-limit, debit. */
  admit(request: AdmitRequest): Promise<AdmitOutcome>;
  /**
   * Adds credits (a top-up: re-arms the alerts unless `rearm` is false), with its events,
   * atomically. Idempotent per request id.
   */
  topUp(
    accountId: string,
    kind: TopUpKind,
    grant: CreditChange & { amount: number; rearm?: boolean },
    events?: EventRecord[],
    plan?: PlanChange,
  ): Promise<{ applied: boolean; account: AccountRecord } | null>;
  /**
   * Returns the credits debited under `requestId`, at most once; `events` are written only if it
   * applies. The call's Idempotency-Key, if any, is forgotten in the same atomic step.
   */
  refund(
    accountId: string,
    change: RefundChange,
    events?: EventRecord[],
  ): Promise<
    | { status: "refunded"; amount: number; balance: number }
    | { status: "already_refunded" | "not_charged" }
  >;
  /**
   * Newest first: the entries the store still holds (with the books on, those not yet exported
   * and trimmed). Throws InvalidCursorError for a cursor that is not a ledger entry id.
   */
  ledger(accountId: string, page: { cursor?: string; limit: number }): Promise<Page<LedgerEntry>>;
  /** The store's oldest ledger entries of an account, oldest first: what the books exporter moves next. */
  oldestLedger(accountId: string, limit: number): Promise<LedgerEntry[]>;
  /** Forgets an account's ledger entries up to and including `throughId`, once the books hold them. */
  trimLedger(accountId: string, throughId: string): Promise<void>;
  /**
   * Accounts (in pages of the account list, oldest first) with ledger entries still in the store;
   * `nextCursor` pages on through every account, whether or not it had a backlog.
   */
  ledgerBacklog(page: { cursor?: string; limit: number }): Promise<Page<LedgerBacklog>>;

  /** Sliding-window counter for things that are not an account (sign-ups per client address). */
  hitRateLimit(
    bucket: string,
    limit: number,
    windowMs: number,
    member: string,
  ): Promise<RateState & { allowed: boolean }>;
  /** Gives back a hit that turned out not to count (a sign-up refused as a duplicate). */
  releaseRateLimit(bucket: string, member: string): Promise<void>;

  /** Events waiting for delivery, oldest first, and their acknowledgement once handed on. */
  appendEvents(accountId: string, events: EventRecord[]): Promise<void>;
  readOutbox(accountId: string, limit: number): Promise<EventRecord[]>;
  ackOutbox(accountId: string, eventIds: string[]): Promise<void>;
  /** Accounts that may have undelivered events. */
  outboxAccounts(): Promise<string[]>;
  /** The account's recent events (newest first), recorded as the relay hands them on. */
  logEvents(accountId: string, events: EventRecord[], keep: number): Promise<void>;
  listEvents(accountId: string, limit: number): Promise<EventRecord[]>;
  /** Re-indexes outboxes a crashed process left unindexed (run at start-up); returns how many. */
  rebuildOutboxIndex(): Promise<number>;

  /**
   * Idempotency-Key records (per account): the first caller claims the key for one execution;
   * later callers with the same fingerprint see it in progress or get the stored response.
   */
  /**
   * Claims an Idempotency-Key for one execution (for `leaseMs`; the record lives `ttlSeconds`).
   * A claim whose lease ran out unanswered (its process died) is handed to the next caller with
   * the request id it was charged under, so the retry is not charged again. The request holding
   * the claim (same request id) may begin again and continues it: a paid call claims its key
   * before its payment settles, then runs under that claim.
   */
  beginIdempotent(
    accountId: string,
    key: string,
    claim: IdempotencyClaim,
  ): Promise<IdempotencyState>;
  completeIdempotent(
    accountId: string,
    key: string,
    response: StoredResponse,
    ttlSeconds: number,
  ): Promise<void>;
  /** Forgets an execution that failed without a result worth replaying, so a retry runs again. */
  abandonIdempotent(accountId: string, key: string): Promise<void>;

  /**
   * A Business account's own tools (src/tools/custom), one per name: `exists` when the account
   * already has one of that name, `cap` when it has `cap` tools; checked and added atomically.
   */
  addCustomTool(tool: CustomToolRecord, cap: number): Promise<"added" | "exists" | "cap">;
  getCustomTool(accountId: string, name: string): Promise<CustomToolRecord | null>;
  /**
   * The tool with its owner's tier, read together (one round trip): a call must know the account
   * is still on a tier with custom endpoints. `tier` is null when the account does not exist.
   */
  getCustomToolWithTier(
    accountId: string,
    name: string,
  ): Promise<{ tool: CustomToolRecord; tier: TierName | null } | null>;
  /** Oldest first. */
  listCustomTools(accountId: string): Promise<CustomToolRecord[]>;
  deleteCustomTool(accountId: string, name: string): Promise<boolean>;

  /** Adds a webhook unless the owner already has `cap`; false when the cap is reached. */
  addWebhook(webhook: WebhookRecord, cap: number): Promise<boolean>;
  listWebhooks(ownerId: string): Promise<WebhookRecord[]>;
  getWebhook(ownerId: string, id: string): Promise<WebhookRecord | null>;
  putWebhook(webhook: WebhookRecord): Promise<void>;
  deleteWebhook(ownerId: string, id: string): Promise<boolean>;
  /** Appends to a webhook's delivery log (newest first, the last `keep` kept). */
  recordDelivery(
    ownerId: string,
    webhookId: string,
    attempt: DeliveryAttempt,
    keep: number,
  ): Promise<void>;
  listDeliveries(ownerId: string, webhookId: string, limit: number): Promise<DeliveryAttempt[]>;

  /**
   * x402 authorizations, one record per (chain, token, payer, nonce): the first caller claims it
   * (null), anyone after gets the record as it stands — so one authorization is settled and
   * credited at most once, across every process.
   */
  claimPayment(record: PaymentRecord): Promise<PaymentRecord | null>;
  savePayment(record: PaymentRecord): Promise<void>;
  getPayment(id: string): Promise<PaymentRecord | null>;
  /** Forgets a claim whose payment failed before anything moved, so it can be tried again. */
  releasePayment(id: string): Promise<void>;
  /** Claims the one thing a settled payment pays for (kept until `expiresAt`); false when it was already served. */
  claimPaymentService(id: string, expiresAt: number): Promise<boolean>;
  /** Payments not yet settled: pending ones, and those still (or, if their process died, forever) settling. */
  openPayments(): Promise<PaymentRecord[]>;

  /** A single-use token (a sign-in nonce): saved with a lifetime, consumed at most once. */
  saveNonce(name: string, ttlMs: number): Promise<void>;
  consumeNonce(name: string): Promise<boolean>;
  /**
   * The value first offered under `name`, kept for good: a setting every process of a
   * deployment must agree on (the development secret key), decided by whoever offers first.
   */
  keepFirst(name: string, candidate: string): Promise<string>;
  /** A lease shared by every process (null when someone else holds it); released by its token. */
  acquireLock(name: string, ttlMs: number): Promise<string | null>;
  releaseLock(name: string, token: string): Promise<void>;
  /**
   * A relayer's nonce sequence, shared by every process: the next nonce, handed out once. A
   * sequence that does not exist yet starts at `start` (the chain's count); without one, null.
   */
  takeRelayerNonce(name: string, start: number | null): Promise<number | null>;
  /** The nonce a relayer's sequence would hand out next (null: no sequence yet), changing nothing. */
  peekRelayerNonce(name: string): Promise<number | null>;
  /** Moves a relayer's sequence forward to `next` (a resync with the chain), never back; the sequence after. */
  raiseRelayerNonce(name: string, next: number): Promise<number>;

  /** The account holding an e-mail address (as claimed by `claimEmail`), or null. */
  accountIdByEmail(email: string): Promise<string | null>;

  /**
   * A value kept for at most `ttlMs` and read at most once (a sign-in attempt's secrets): `takeOnce`
   * returns it and deletes it in one step, so two readers racing get it once between them.
   */
  saveOnce(name: string, value: string, ttlMs: number): Promise<void>;
  takeOnce(name: string): Promise<string | null>;

  /**
   * A Business account's single sign-on connection. Each e-mail domain it lists is claimed for
   * that account alone (the sign-in page finds the account by domain): saving refuses, changing
   * nothing, when another account holds one; domains it no longer lists are released.
   */
  putSsoConnection(
    connection: SsoConnectionRecord,
  ): Promise<{ status: "saved" } | { status: "domain_taken"; domain: string }>;
  getSsoConnection(accountId: string): Promise<SsoConnectionRecord | null>;
  /** Removes the connection and releases its domains; false when there was none. */
  deleteSsoConnection(accountId: string): Promise<boolean>;
  /** The account whose SSO connection lists this (lower-case) e-mail domain, or null. */
  accountIdBySsoDomain(domain: string): Promise<string | null>;

  /**
   * Dashboard sessions, server-side: the record lives `idleMs` past its last use and never past
   * its absolute `expiresAt`. `touchSession` reads a live session and pushes its idle expiry back
   * in one step; `endAccountSessions` ends every session of the account at once (sign out
   * everywhere), including any created before it in another process.
   */
  createSession(session: SessionRecord, idleMs: number): Promise<void>;
  touchSession(accountId: string, id: string, idleMs: number): Promise<SessionRecord | null>;
  endSession(accountId: string, id: string): Promise<void>;
  endAccountSessions(accountId: string): Promise<void>;

  /**
   * Follows the account's ledger as it grows, across every process writing it: a follower holds
   * its own connection (a blocking read), so it is closed when its reader goes away.
   */
  followLedger(accountId: string): LedgerFollower;

  ping(): Promise<void>;
  close(): Promise<void>;
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
  /** A facilitator settlement: the credits charged to `accountId` once it settles (instead of a credit). */
  facilitatorFee?: number;
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
}

export type IdempotencyState =
  | { state: "started"; requestId: string }
  | { state: "in_progress" }
  | { state: "conflict" }
  | { state: "completed"; response: StoredResponse };

/** The per-tier numbers a store needs; passed in, so the store never imports the tier table. */
export interface TierLimits {
  [tier: string]: { requestsPerMinute: number; monthlyAllowance: number };
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
 * hour (src/store/redis.ts, debitRecord); the ledger entry itself lives on in the books.
 */
export const OPERATION_TTL_SECONDS = 24 * 3600;
