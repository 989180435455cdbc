import { EventEmitter } from "node:events";
import type { TierName } from "../accounts/tiers.js";
import { applyDebit, applyTopUp, nextAllowanceAt, type AlertState } from "../credits/rules.js";
import { countSpend, giveBack, type SpendState } from "../credits/controls.js";
import { eventRecord, type EventRecord } from "../events/types.js";
import { debitedNoLaterThan, newEventId } from "../lib/ids.js";
import {
  KEY_USE_RESOLUTION_MS,
  RATE_WINDOW_MS,
  type AccountRecord,
  type AdmitOutcome,
  type AdmitRequest,
  type CreditChange,
  type KeyRecord,
  type LedgerEntry,
  type LedgerBacklog,
  type LedgerKind,
  type NewAccount,
  type Page,
  type IdempotencyState,
  type IdempotencyClaim,
  InvalidCursorError,
  isLedgerId,
  type RefundChange,
  type RevokeOutcome,
  type Store,
  type StoredResponse,
  type TierLimits,
  type WebhookRecord,
  type CustomToolRecord,
  type PaymentRecord,
  type PlanChange,
  type DeliveryAttempt,
  type TopUpKind,
  type SessionRecord,
  type SsoConnectionRecord,
  type LedgerFollower,
  CALENDAR_WINDOWS,
  controlWindow,
  isLimitedKey,
  type ControlWindows,
  type KeyUpdate,
  withControls,
} from "./types.js";

interface MemAccount extends AccountRecord, AlertState, SpendState {
  lowArmed: boolean;
  depletedArmed: boolean;
  keysByHash: Map<string, KeyRecord>;
  keysById: Map<string, KeyRecord>;
  /** Requests admitted per second (the Redis store's window, src/credits/lua/prelude.lua rate_window). */
  rateWindow: Map<number, number>;
  ledger: LedgerEntry[];
  /** Request id → the debit's cost while charged, "refunded" after: idempotent debits, single refunds. */
  debits: Map<string, number | "refunded">;
  /** Request ids of the grants applied: idempotent top-ups. */
  operations: Set<string>;
  outbox: EventRecord[];
  /** Each budgeted key's spend in its current budget window (account controls). */
  keySpend: Map<string, { windowStart: number; credits: number }>;
}

/**
 * The in-memory store: one process, no persistence. Each method runs to completion without
 * awaiting, which is what makes it atomic on Node's single thread.
 */
export class MemoryStore implements Store {
  private readonly accounts = new Map<string, MemAccount>();
  private readonly emails = new Map<string, string>();
  private readonly buckets = new Map<string, { at: number; member: string }[]>();
  private readonly idempotency = new Map<
    string,
    {
      fingerprint: string;
      requestId: string;
      leaseUntil: number;
      expiresAt: number;
      response: StoredResponse | null;
    }
  >();
  private readonly webhooks = new Map<string, Map<string, WebhookRecord>>();
  private readonly customTools = new Map<string, Map<string, CustomToolRecord>>();
  private readonly eventLogs = new Map<string, EventRecord[]>();
  private readonly payments = new Map<string, PaymentRecord>();
  private readonly locks = new Map<string, { token: string; until: number }>();
  private readonly deliveries = new Map<string, DeliveryAttempt[]>();
  private ledgerSeq = 0;

  constructor(
    private readonly tiers: TierLimits,
    private readonly periodMs: number,
    private readonly now: () => number = Date.now,
    private readonly windows: ControlWindows = CALENDAR_WINDOWS,
  ) {}

  private view(a: MemAccount): AccountRecord {
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

  private addLedger(
    a: MemAccount,
    kind: LedgerKind,
    amount: number,
    change: CreditChange,
    tool: string | null = null,
    keyId: string | null = null,
  ) {
    a.ledger.push({
      id: `${this.now()}-${++this.ledgerSeq}`,
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

  /** Emits an account id each time its ledger grows, for `followLedger`. */
  private readonly ledgerGrew = new EventEmitter().setMaxListeners(0);

  private topUpAccount(
    a: MemAccount,
    kind: TopUpKind,
    amount: number,
    change: CreditChange & { rearm?: boolean },
  ) {
    applyTopUp(a, amount, change.rearm !== false);
    this.addLedger(a, kind, amount, change);
  }

  /** Sliding-window log, the same algorithm as the Redis script; drops expired entries in place. `count` requests are admitted all or none. */
  /** The account's window of per-second counts, as rate_window in src/credits/lua/prelude.lua. */
  private rateWindow(seconds: Map<number, number>, limit: number, count: number) {
    const now = this.now();
    let used = 0;
    let oldest: number | null = null;
    for (const [second, n] of seconds) {
      if ((second + 1) * 1000 <= now - RATE_WINDOW_MS) seconds.delete(second);
      else {
        used += n;
        if (oldest === null || second < oldest) oldest = second;
      }
    }
    // As in Lua: never announced beyond the window (a Retry-After within the minute), though a
    // second whose calls filled the window may keep counting up to a second longer.
    const resetOf = (second: number) =>
      Math.min((second + 1) * 1000 + RATE_WINDOW_MS - now, RATE_WINDOW_MS);
    if (used + count > limit)
      return {
        allowed: false,
        remaining: limit - Math.min(used, limit),
        resetMs: oldest === null ? RATE_WINDOW_MS : resetOf(oldest),
      };
    const second = Math.floor(now / 1000);
    seconds.set(second, (seconds.get(second) ?? 0) + count);
    return { allowed: true, remaining: limit - used - count, resetMs: resetOf(oldest ?? second) };
  }

  private slide(log: { at: number }[], limit: number, windowMs: number, count = 1) {
    const now = this.now();
    while (log.length > 0 && log[0]!.at <= now - windowMs) log.shift();
    const allowed = log.length + count <= limit;
    return {
      allowed,
      now,
      remaining: allowed ? limit - log.length - count : limit - Math.min(log.length, limit),
      resetOf: (oldest: number | undefined) =>
        oldest === undefined ? windowMs : oldest + windowMs - now,
    };
  }

  async createAccount(
    account: NewAccount,
    grant: CreditChange & { amount: number },
    events: EventRecord[],
  ) {
    if (this.accounts.has(account.id)) throw new Error("account exists");
    const a: MemAccount = {
      ...account,
      emailVerified: false,
      balance: 0,
      reference: 0,
      createdAt: this.now(),
      allowanceAt: 0,
      planExpiresAt: 0,
      dedicatedWorkersUrl: null,
      spendAlert: null,
      spend: { windowStart: 0, credits: 0 },
      spendAlertedWindow: 0,
      keySpend: new Map(),
      lowArmed: false,
      depletedArmed: false,
      keysByHash: new Map(),
      keysById: new Map(),
      rateWindow: new Map(),
      ledger: [],
      debits: new Map(),
      operations: new Set(),
      outbox: [...events],
    };
    this.accounts.set(a.id, a);
    this.topUpAccount(a, "grant", grant.amount, grant);
    return this.view(a);
  }

  async getAccount(id: string) {
    const a = this.accounts.get(id);
    return a ? this.view(a) : null;
  }

  async listAccounts(page: { cursor?: string; limit: number }): Promise<Page<AccountRecord>> {
    const all = [...this.accounts.values()].sort(
      (x, y) => x.createdAt - y.createdAt || x.id.localeCompare(y.id),
    );
    const start = page.cursor !== undefined ? all.findIndex((a) => a.id === page.cursor) + 1 : 0;
    if (start === 0 && page.cursor !== undefined)
      throw new InvalidCursorError(`no account ${page.cursor}`);
    const slice = all.slice(start, start + page.limit + 1);
    return {
      items: slice.slice(0, page.limit).map((a) => this.view(a)),
      nextCursor: slice.length > page.limit ? slice[page.limit - 1]!.id : null,
    };
  }

  async claimEmail(email: string, accountId: string) {
    const holder = this.emails.get(email);
    if (holder && this.accounts.has(holder)) return false;
    this.emails.set(email, accountId);
    return true;
  }

  async setTier(accountId: string, tier: TierName) {
    const a = this.accounts.get(accountId);
    if (!a) return null;
    a.tier = tier;
    a.planExpiresAt = 0;
    return this.view(a);
  }

  async setDedicatedWorkers(accountId: string, url: string | null) {
    const a = this.accounts.get(accountId);
    if (!a) return null;
    a.dedicatedWorkersUrl = url;
    return this.view(a);
  }

  async verifyEmail(accountId: string, grant: CreditChange & { amount: number }) {
    const a = this.accounts.get(accountId);
    if (!a) return "not_found" as const;
    if (a.emailVerified) return "already_verified" as const;
    a.emailVerified = true;
    a.allowanceAt = this.now() + this.periodMs;
    this.topUpAccount(a, "grant", grant.amount, grant);
    a.operations.add(grant.requestId);
    return "verified" as const;
  }

  async addKey(key: KeyRecord) {
    const a = this.accounts.get(key.accountId);
    if (!a) throw new Error("no such account");
    const { budgetSpent: _spent, ...stored } = key;
    const copy = { ...stored, lastUsedAt: null };
    a.keysByHash.set(key.hash, copy);
    a.keysById.set(key.id, copy);
  }

  async listKeys(accountId: string) {
    const a = this.accounts.get(accountId);
    return a
      ? [...a.keysById.values()]
          .map((key) => ({ ...withControls(key), budgetSpent: this.budgetSpent(a, key) }))
          .sort((x, y) => x.createdAt - y.createdAt || x.id.localeCompare(y.id))
      : [];
  }

  /** The key's spend in its current budget window (0 without a budget). */
  private budgetSpent(a: MemAccount, key: KeyRecord): number {
    if (!key.budget) return 0;
    const spend = a.keySpend.get(key.id);
    const { start } = controlWindow(this.now(), key.budget.period, this.windows);
    return spend?.windowStart === start ? spend.credits : 0;
  }

  async updateKey(accountId: string, keyId: string, update: KeyUpdate) {
    const a = this.accounts.get(accountId);
    const key = a?.keysById.get(keyId);
    if (!a || !key) return null;
    // keysByHash and keysById hold the same object: the admission sees the change at once.
    for (const [field, value] of Object.entries(update))
      if (value !== undefined) Object.assign(key, { [field]: value });
    return { ...withControls(key), budgetSpent: this.budgetSpent(a, key) };
  }

  async setSpendAlert(accountId: string, alert: { credits: number } | null) {
    const a = this.accounts.get(accountId);
    if (!a) return null;
    a.spendAlert = alert ? { ...alert } : null;
    a.spendAlertedWindow = 0;
    return this.view(a);
  }

  async revokeKey(
    accountId: string,
    keyId: string,
    graceMs: number,
    options: { keepOneActive?: boolean } = {},
  ): Promise<RevokeOutcome> {
    const keys = this.accounts.get(accountId)?.keysById;
    const key = keys?.get(keyId);
    if (!keys || !key) return { status: "not_found" };
    const now = this.now();
    if (key.revokedAt !== null && key.revokedAt <= now)
      return { status: "already_revoked", key: { ...key } };
    // Active: no revocation scheduled, and not expired (account controls).
    const active = (k: KeyRecord) =>
      k.revokedAt === null && (k.expiresAt == null || k.expiresAt > now);
    if (
      options.keepOneActive &&
      active(key) &&
      ![...keys.values()].some((other) => other.id !== key.id && active(other))
    ) {
      return { status: "last_active_key", key: { ...key } };
    }
    const at = now + graceMs;
    key.revokedAt = key.revokedAt !== null && key.revokedAt < at ? key.revokedAt : at;
    return { status: "revoked", key: { ...key } };
  }

  async admit(request: AdmitRequest): Promise<AdmitOutcome> {
    const a = this.accounts.get(request.accountId);
    let keyId: string | null = null;
    let key: KeyRecord | undefined;
    if (request.keyHash !== null) {
      key = a?.keysByHash.get(request.keyHash);
      if (!a || !key) return { status: "invalid_key" };
      if (key.revokedAt !== null && this.now() >= key.revokedAt) return { status: "revoked" };
      // Account controls on the key: refused before anything is counted.
      if (key.expiresAt && this.now() >= key.expiresAt)
        return { status: "expired", expiresAt: key.expiresAt };
      if (key.allowedTools && request.tool && !key.allowedTools.includes(request.tool))
        return { status: "tool_not_allowed", allowedTools: [...key.allowedTools] };
      keyId = key.id;
      if (this.now() - (key.lastUsedAt ?? 0) >= KEY_USE_RESOLUTION_MS) key.lastUsedAt = this.now();
    }
    if (!a) return { status: "invalid_key" };
    const now = this.now();
    if (a.tier !== "free" && a.planExpiresAt > 0 && now >= a.planExpiresAt) {
      a.tier = "free";
      a.planExpiresAt = 0;
    }
    const tier = this.tiers[a.tier] ?? this.tiers.free!;

    if (a.tier === "free" && a.allowanceAt > 0 && now >= a.allowanceAt) {
      if (a.balance < tier.monthlyAllowance) {
        this.topUpAccount(a, "allowance", tier.monthlyAllowance - a.balance, {
          requestId: `allowance:${a.allowanceAt}`,
          reason: "monthly Free allowance",
        });
      }
      a.allowanceAt = nextAllowanceAt(a.allowanceAt, now, this.periodMs);
    }

    const requests = request.countRequest === false ? 0 : (request.requests ?? 1);
    let rate = { limit: tier.requestsPerMinute, remaining: -1, resetMs: 0 };
    if (requests > 0) {
      const window = this.rateWindow(a.rateWindow, tier.requestsPerMinute, requests);
      rate = {
        limit: tier.requestsPerMinute,
        remaining: window.remaining,
        resetMs: window.resetMs,
      };
      if (!window.allowed) return { status: "rate_limited", account: this.view(a), rate };
    }

    let charged = false;
    const events: EventRecord[] = [];
    if (request.cost > 0 && !a.debits.has(request.requestId)) {
      // The key's own budget first: a call that would take it past its budget is refused, uncharged.
      const budget = key?.budget ?? null;
      const window = budget ? controlWindow(now, budget.period, this.windows) : null;
      const spent = budget ? this.budgetSpent(a, key!) : 0;
      if (budget && window && spent + request.cost > budget.credits)
        return {
          status: "key_budget_exceeded",
          account: this.view(a),
          rate,
          budget: { ...budget, spent, windowStart: window.start, resetsAt: window.next },
        };
      if (a.balance < request.cost)
        return { status: "insufficient_credits", account: this.view(a), rate };
      for (const alert of applyDebit(a, request.cost, request.tool)) {
        events.push(eventRecord(newEventId(), alert.event, a.id, alert.data));
      }
      if (window && keyId)
        a.keySpend.set(keyId, { windowStart: window.start, credits: spent + request.cost });
      const spendAlert = countSpend(a, request.cost, now, this.windows, request.tool);
      if (spendAlert)
        events.push(eventRecord(newEventId(), "spend.threshold_reached", a.id, spendAlert));
      this.addLedger(a, "debit", -request.cost, request, request.tool, keyId);
      a.debits.set(request.requestId, request.cost);
      a.outbox.push(...events);
      charged = true;
    }
    const keyLimited = key ? isLimitedKey(key) : false;
    return { status: "ok", account: this.view(a), keyId, keyLimited, rate, charged, events };
  }

  async topUp(
    accountId: string,
    kind: TopUpKind,
    grant: CreditChange & { amount: number; rearm?: boolean },
    events: EventRecord[] = [],
    plan?: PlanChange,
  ) {
    const a = this.accounts.get(accountId);
    if (!a) return null;
    if (a.operations.has(grant.requestId)) return { applied: false, account: this.view(a) };
    if (plan) {
      const base =
        a.tier === plan.tier && a.planExpiresAt > this.now() ? a.planExpiresAt : this.now();
      a.tier = plan.tier as TierName;
      a.planExpiresAt = base + plan.periodMs;
    }
    this.topUpAccount(a, kind, grant.amount, grant);
    a.outbox.push(...events);
    a.operations.add(grant.requestId);
    return { applied: true, account: this.view(a) };
  }

  async refund(accountId: string, change: RefundChange, events: EventRecord[] = []) {
    if (change.idempotencyKey) this.idempotency.delete(`${accountId}\0${change.idempotencyKey}`);
    const a = this.accounts.get(accountId);
    const cost = a?.debits.get(change.requestId);
    if (!a || cost === undefined) return { status: "not_charged" as const };
    if (cost === "refunded") return { status: "already_refunded" as const };
    a.debits.set(change.requestId, "refunded");
    a.balance += cost;
    const keyId = change.keyHash ? (a.keysByHash.get(change.keyHash)?.id ?? null) : null;
    const debitedAt = debitedNoLaterThan(change.requestId);
    giveBack(a.spend, cost, debitedAt);
    if (keyId) giveBack(a.keySpend.get(keyId), cost, debitedAt);
    this.addLedger(a, "refund", cost, change, change.tool ?? null, keyId);
    a.outbox.push(...events);
    return { status: "refunded" as const, amount: cost, balance: a.balance };
  }

  async ledger(
    accountId: string,
    page: { cursor?: string; limit: number },
  ): Promise<Page<LedgerEntry>> {
    if (page.cursor !== undefined && !isLedgerId(page.cursor))
      throw new InvalidCursorError(`not a ledger id: ${page.cursor}`);
    // Entries strictly older than the cursor, as Redis's exclusive XREVRANGE does (the cursor's own entry need not exist).
    const cursor = page.cursor?.split("-").map(BigInt);
    const older = (id: string) => {
      const [ms, seq] = id.split("-").map(BigInt) as [bigint, bigint];
      return ms < cursor![0]! || (ms === cursor![0]! && seq < cursor![1]!);
    };
    const entries = [...(this.accounts.get(accountId)?.ledger ?? [])]
      .reverse()
      .filter((e) => cursor === undefined || older(e.id));
    const slice = entries.slice(0, page.limit + 1);
    return {
      items: slice.slice(0, page.limit),
      nextCursor: slice.length > page.limit ? slice[page.limit - 1]!.id : null,
    };
  }

  async oldestLedger(accountId: string, limit: number): Promise<LedgerEntry[]> {
    return (this.accounts.get(accountId)?.ledger ?? []).slice(0, limit);
  }

  async trimLedger(accountId: string, throughId: string): Promise<void> {
    const a = this.accounts.get(accountId);
    if (!a) return;
    const [ms, seq] = throughId.split("-").map(BigInt) as [bigint, bigint];
    a.ledger = a.ledger.filter((e) => {
      const [ems, eseq] = e.id.split("-").map(BigInt) as [bigint, bigint];
      return ems > ms || (ems === ms && eseq > seq);
    });
  }

  async ledgerBacklog(page: { cursor?: string; limit: number }): Promise<Page<LedgerBacklog>> {
    const start = page.cursor ? Number(page.cursor) : 0;
    const accounts = [...this.accounts.values()].slice(start, start + page.limit);
    const items = accounts.flatMap((a) => {
      const oldestEvent = this.eventLogs.get(a.id)?.at(-1);
      const times = [a.ledger[0]?.at, oldestEvent && Date.parse(oldestEvent.timestamp)].filter(
        (t): t is number => typeof t === "number",
      );
      return times.length > 0 ? [{ accountId: a.id, oldestAt: Math.min(...times) }] : [];
    });
    return {
      items,
      nextCursor: accounts.length === page.limit ? String(start + page.limit) : null,
    };
  }

  async hitRateLimit(bucket: string, limit: number, windowMs: number, member: string) {
    const log = this.buckets.get(bucket) ?? [];
    this.buckets.set(bucket, log);
    const window = this.slide(log, limit, windowMs);
    if (window.allowed) log.push({ at: window.now, member });
    return {
      allowed: window.allowed,
      limit,
      remaining: window.remaining,
      resetMs: log.length ? window.resetOf(log[0]!.at) : 0,
    };
  }

  async releaseRateLimit(bucket: string, member: string) {
    const log = this.buckets.get(bucket);
    if (log)
      this.buckets.set(
        bucket,
        log.filter((hit) => hit.member !== member),
      );
  }

  async appendEvents(accountId: string, events: EventRecord[]) {
    this.accounts.get(accountId)?.outbox.push(...events);
  }

  async readOutbox(accountId: string, limit: number) {
    return (this.accounts.get(accountId)?.outbox ?? []).slice(0, limit);
  }

  async ackOutbox(accountId: string, eventIds: string[]) {
    const a = this.accounts.get(accountId);
    if (a) a.outbox = a.outbox.filter((e) => !eventIds.includes(e.id));
  }

  async logEvents(accountId: string, events: EventRecord[], keep: number | null) {
    const logged = this.eventLogs.get(accountId) ?? [];
    const fresh = events.filter((e) => !logged.some((l) => l.id === e.id));
    const all = [...fresh.reverse(), ...logged];
    this.eventLogs.set(accountId, keep === null ? all : all.slice(0, keep));
  }

  async oldestLoggedEvents(accountId: string, limit: number) {
    return (this.eventLogs.get(accountId) ?? []).slice(-limit).reverse();
  }

  async forgetLoggedEvents(accountId: string, events: EventRecord[]) {
    const ids = new Set(events.map((e) => e.id));
    const logged = this.eventLogs.get(accountId);
    if (logged)
      this.eventLogs.set(
        accountId,
        logged.filter((e) => !ids.has(e.id)),
      );
  }

  async listEvents(accountId: string, limit: number) {
    return (this.eventLogs.get(accountId) ?? []).slice(0, limit);
  }

  async rebuildOutboxIndex() {
    return 0; // the memory store derives its index; nothing can be left unindexed
  }

  async outboxAccounts() {
    return [...this.accounts.values()].filter((a) => a.outbox.length > 0).map((a) => a.id);
  }

  async beginIdempotent(
    accountId: string,
    key: string,
    claim: IdempotencyClaim,
  ): Promise<IdempotencyState> {
    const id = `${accountId}\0${key}`;
    const record = this.idempotency.get(id);
    const now = this.now();
    if (!record || record.expiresAt <= now) {
      this.idempotency.set(id, {
        fingerprint: claim.fingerprint,
        requestId: claim.requestId,
        leaseUntil: now + claim.leaseMs,
        expiresAt: now + claim.ttlSeconds * 1000,
        response: null,
      });
      return { state: "started", requestId: claim.requestId };
    }
    if (record.fingerprint !== claim.fingerprint) return { state: "conflict" };
    if (record.response) return { state: "completed", response: record.response };
    if (record.requestId !== claim.requestId && now < record.leaseUntil)
      return { state: "in_progress" };
    record.leaseUntil = now + claim.leaseMs;
    return { state: "started", requestId: record.requestId };
  }

  async completeIdempotent(
    accountId: string,
    key: string,
    response: StoredResponse,
    ttlSeconds: number,
  ) {
    const record = this.idempotency.get(`${accountId}\0${key}`);
    if (record) Object.assign(record, { response, expiresAt: this.now() + ttlSeconds * 1000 });
  }

  async abandonIdempotent(accountId: string, key: string) {
    this.idempotency.delete(`${accountId}\0${key}`);
  }

  private customToolsOf(accountId: string) {
    const tools = this.customTools.get(accountId) ?? new Map<string, CustomToolRecord>();
    this.customTools.set(accountId, tools);
    return tools;
  }

  async addCustomTool(tool: CustomToolRecord, cap: number) {
    const tools = this.customToolsOf(tool.accountId);
    if (tools.has(tool.name)) return "exists" as const;
    if (tools.size >= cap) return "cap" as const;
    tools.set(tool.name, structuredClone(tool));
    return "added" as const;
  }

  async getCustomToolWithTier(accountId: string, name: string) {
    const tool = await this.getCustomTool(accountId, name);
    return tool ? { tool, tier: this.accounts.get(accountId)?.tier ?? null } : null;
  }

  async getCustomTool(accountId: string, name: string) {
    // Read without creating: lookups come with any account id a caller's key names.
    const tool = this.customTools.get(accountId)?.get(name);
    return tool ? structuredClone(tool) : null;
  }

  async listCustomTools(accountId: string) {
    return [...(this.customTools.get(accountId)?.values() ?? [])]
      .map((t) => structuredClone(t))
      .sort((a, b) => a.createdAt - b.createdAt || a.name.localeCompare(b.name));
  }

  async deleteCustomTool(accountId: string, name: string) {
    return this.customTools.get(accountId)?.delete(name) ?? false;
  }

  private hooksOf(ownerId: string) {
    let hooks = this.webhooks.get(ownerId);
    if (!hooks) this.webhooks.set(ownerId, (hooks = new Map()));
    return hooks;
  }

  async addWebhook(webhook: WebhookRecord, cap: number) {
    const hooks = this.hooksOf(webhook.ownerId);
    if (hooks.size >= cap) return false;
    hooks.set(webhook.id, structuredClone(webhook));
    return true;
  }

  async listWebhooks(ownerId: string) {
    return [...this.hooksOf(ownerId).values()]
      .map((w) => structuredClone(w))
      .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  }

  async getWebhook(ownerId: string, id: string) {
    const hook = this.hooksOf(ownerId).get(id);
    return hook ? structuredClone(hook) : null;
  }

  async putWebhook(webhook: WebhookRecord) {
    this.hooksOf(webhook.ownerId).set(webhook.id, structuredClone(webhook));
  }

  async deleteWebhook(ownerId: string, id: string) {
    this.deliveries.delete(`${ownerId}\0${id}`);
    return this.hooksOf(ownerId).delete(id);
  }

  async recordDelivery(ownerId: string, webhookId: string, attempt: DeliveryAttempt, keep: number) {
    const key = `${ownerId}\0${webhookId}`;
    this.deliveries.set(key, [attempt, ...(this.deliveries.get(key) ?? [])].slice(0, keep));
  }

  async listDeliveries(ownerId: string, webhookId: string, limit: number) {
    return (this.deliveries.get(`${ownerId}\0${webhookId}`) ?? []).slice(0, limit);
  }

  async claimPayment(record: PaymentRecord) {
    const existing = this.payments.get(record.id);
    if (existing) return structuredClone(existing);
    this.payments.set(record.id, structuredClone(record));
    return null;
  }

  async savePayment(record: PaymentRecord) {
    this.payments.set(record.id, structuredClone(record));
  }

  private readonly served = new Map<string, number>();
  async claimPaymentService(id: string, expiresAt: number) {
    if ((this.served.get(id) ?? 0) > this.now()) return false;
    this.served.set(id, expiresAt);
    return true;
  }

  async getPayment(id: string) {
    const record = this.payments.get(id);
    if (record?.state === "settled" && record.expiresAt && record.expiresAt <= this.now())
      this.payments.delete(id);
    return record && this.payments.has(id) ? structuredClone(record) : null;
  }

  async releasePayment(id: string) {
    this.payments.delete(id);
  }

  async openPayments() {
    return [...this.payments.values()]
      .filter((p) => p.state !== "settled")
      .map((p) => structuredClone(p));
  }

  private readonly nonces = new Map<string, number>();
  async saveNonce(name: string, ttlMs: number) {
    this.nonces.set(name, this.now() + ttlMs);
  }

  async consumeNonce(name: string) {
    const until = this.nonces.get(name);
    this.nonces.delete(name);
    return until !== undefined && until > this.now();
  }

  private readonly settings = new Map<string, string>();
  async keepFirst(name: string, candidate: string) {
    if (!this.settings.has(name)) this.settings.set(name, candidate);
    return this.settings.get(name)!;
  }

  async acquireLock(name: string, ttlMs: number) {
    const held = this.locks.get(name);
    if (held && held.until > this.now()) return null;
    const token = newEventId();
    this.locks.set(name, { token, until: this.now() + ttlMs });
    return token;
  }

  async releaseLock(name: string, token: string) {
    if (this.locks.get(name)?.token === token) this.locks.delete(name);
  }

  private readonly relayerNonces = new Map<string, number>();

  async takeRelayerNonce(name: string, start: number | null) {
    const next = this.relayerNonces.get(name) ?? start;
    if (next === null) return null;
    this.relayerNonces.set(name, next + 1);
    return next;
  }

  async peekRelayerNonce(name: string) {
    return this.relayerNonces.get(name) ?? null;
  }

  async raiseRelayerNonce(name: string, next: number) {
    this.relayerNonces.set(name, Math.max(next, this.relayerNonces.get(name) ?? 0));
    return this.relayerNonces.get(name)!;
  }

  async ping() {}
  async accountIdByEmail(email: string) {
    return this.emails.get(email) ?? null;
  }

  private readonly onceValues = new Map<string, { value: string; until: number }>();

  async saveOnce(name: string, value: string, ttlMs: number) {
    this.onceValues.set(name, { value, until: this.now() + ttlMs });
  }

  async takeOnce(name: string) {
    const kept = this.onceValues.get(name);
    this.onceValues.delete(name);
    return kept && kept.until > this.now() ? kept.value : null;
  }

  private readonly ssoConnections = new Map<string, SsoConnectionRecord>();
  private readonly ssoDomains = new Map<string, string>();

  async putSsoConnection(connection: SsoConnectionRecord) {
    const { accountId } = connection;
    const taken = connection.emailDomains.find(
      (d) => (this.ssoDomains.get(d) ?? accountId) !== accountId,
    );
    if (taken) return { status: "domain_taken" as const, domain: taken };
    for (const d of this.ssoConnections.get(accountId)?.emailDomains ?? [])
      this.ssoDomains.delete(d);
    for (const d of connection.emailDomains) this.ssoDomains.set(d, accountId);
    this.ssoConnections.set(accountId, structuredClone(connection));
    return { status: "saved" as const };
  }

  async getSsoConnection(accountId: string) {
    const connection = this.ssoConnections.get(accountId);
    return connection ? structuredClone(connection) : null;
  }

  async deleteSsoConnection(accountId: string) {
    const connection = this.ssoConnections.get(accountId);
    if (!connection) return false;
    for (const d of connection.emailDomains) this.ssoDomains.delete(d);
    this.ssoConnections.delete(accountId);
    return true;
  }

  async accountIdBySsoDomain(domain: string) {
    return this.ssoDomains.get(domain) ?? null;
  }

  private readonly sessions = new Map<
    string,
    { session: SessionRecord; idleUntil: number; epoch: number }
  >();
  private readonly sessionEpochs = new Map<string, number>();

  async createSession(session: SessionRecord, idleMs: number) {
    this.sessions.set(`${session.accountId}:${session.id}`, {
      session,
      idleUntil: this.now() + idleMs,
      epoch: this.sessionEpochs.get(session.accountId) ?? 0,
    });
  }

  async touchSession(accountId: string, id: string, idleMs: number) {
    const key = `${accountId}:${id}`;
    const entry = this.sessions.get(key);
    if (!entry) return null;
    const now = this.now();
    if (
      entry.idleUntil <= now ||
      entry.session.expiresAt <= now ||
      entry.epoch !== (this.sessionEpochs.get(accountId) ?? 0)
    ) {
      this.sessions.delete(key);
      return null;
    }
    entry.idleUntil = now + idleMs;
    return { ...entry.session };
  }

  async endSession(accountId: string, id: string) {
    this.sessions.delete(`${accountId}:${id}`);
  }

  async endAccountSessions(accountId: string) {
    this.sessionEpochs.set(accountId, (this.sessionEpochs.get(accountId) ?? 0) + 1);
  }

  followLedger(accountId: string): LedgerFollower {
    const abort = new AbortController();
    const newer = (afterId: string) => {
      const [ms, seq] = afterId.split("-").map(BigInt) as [bigint, bigint];
      return (this.accounts.get(accountId)?.ledger ?? []).filter((e) => {
        const [ems, eseq] = e.id.split("-").map(BigInt) as [bigint, bigint];
        return ems > ms || (ems === ms && eseq > seq);
      });
    };
    const grew = this.ledgerGrew;
    return {
      async next(afterId, waitMs) {
        const deadline = Date.now() + waitMs;
        for (;;) {
          const entries = newer(afterId);
          const left = deadline - Date.now();
          if (entries.length > 0 || left <= 0 || abort.signal.aborted) return entries;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(done, left);
            function done() {
              clearTimeout(timer);
              grew.off(accountId, done);
              abort.signal.removeEventListener("abort", done);
              resolve();
            }
            grew.on(accountId, done);
            abort.signal.addEventListener("abort", done);
          });
        }
      },
      async close() {
        abort.abort();
      },
    };
  }

  async close() {}
}
