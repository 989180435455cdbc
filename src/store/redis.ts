import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { Cluster, type RedisOptions } from "ioredis";
import type { TierName } from "../accounts/tiers.js";
import { DEPLETED_MESSAGE, parseEventRecord, type EventRecord } from "../events/types.js";
import { StoreUnavailableError } from "./errors.js";
import { connectRedis, type RedisConnection } from "./redis-connection.js";
import { DEBIT_SLOT_MS, debitedNoLaterThan, newEventId, requestIdSlot } from "../lib/ids.js";
import {
  KEY_USE_RESOLUTION_MS,
  OPERATION_TTL_SECONDS,
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
  type RateState,
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
  CALENDAR_WINDOWS,
  controlWindow,
  type ControlWindows,
  type KeyUpdate,
  withControls,
  type SsoConnectionRecord,
  type LedgerFollower,
} from "./types.js";

/** Every key of one account carries the hash tag `{acct_…}`, so each script touches one cluster slot. */
const k = {
  account: (id: string) => `{${id}}:account`,
  keyRecord: (id: string, hash: string) => `{${id}}:key:${hash}`,
  keyList: (id: string) => `{${id}}:keys`,
  keySpend: (id: string) => `{${id}}:key-spend`,
  rateLog: (id: string) => `{${id}}:rl`,
  ledger: (id: string) => `{${id}}:ledger`,
  operation: (id: string, requestId: string) => `{${id}}:op:${requestId}`,
  debits: (id: string, slot: number) => `{${id}}:debits:${slot.toString(36)}`,
  outbox: (id: string) => `{${id}}:outbox`,
  idempotency: (id: string, key: string) =>
    `{${id}}:idem:${createHash("sha256").update(key).digest("hex")}`,
  // Global indexes, outside any account slot: written beside, never inside, an account script.
  accounts: () => "accounts",
  email: (email: string) => `email:${email}`,
  outboxAccounts: () => "outbox:accounts",
  bucket: (name: string) => `rl:${name}`,
  setting: (name: string) => `setting:${name}`,
  webhooks: (ownerId: string) => `{${ownerId}}:webhooks`,
  customTools: (accountId: string) => `{${accountId}}:custom-tools`,
  deliveries: (ownerId: string, webhookId: string) => `{${ownerId}}:deliveries:${webhookId}`,
  events: (id: string) => `{${id}}:events`,
  session: (id: string, sessionId: string) => `{${id}}:session:${sessionId}`,
  ssoConnection: (id: string) => `{${id}}:sso`,
  ssoDomain: (domain: string) => `sso-domain:${domain}`,
  once: (name: string) => `once:${name}`,
  sessionEpoch: (id: string) => `{${id}}:session-epoch`,
  // Payments are not an account's: they share one slot of their own, so a claim is one script.
  payment: (id: string) => `{payments}:payment:${id}`,
  paymentServed: (id: string) => `{payments}:served:${id}`,
  openPayments: () => "{payments}:open",
  relayerNonce: (name: string) => `{relayers}:nonce:${name}`,
};

/**
 * Where a debit's record lives: a request id minted by newRequestId names its 30-second slot, and
 * the account's records of that slot share one hash (`{acct}:debits:<slot>`, a field of the id's
 * random part holding the cost) that expires as a whole a day and an hour after the slot — a
 * retry under an Idempotency-Key (kept a day) and its refund still find it, and a burst of calls
 * leaves one small listpack (≤ 512 fields at 1,000 calls a minute) instead of a key per call.
 * Other request ids (payments' fees, grants) keep a key of their own for a day.
 */
function debitRecord(accountId: string, requestId: string, now = Date.now()) {
  const stamped = requestIdSlot(requestId);
  const day = OPERATION_TTL_SECONDS;
  if (!stamped)
    return {
      key: k.operation(accountId, requestId),
      field: "debit",
      expireAt: Math.floor(now / 1000) + day,
    };
  const slotEnd = Math.ceil(((stamped.slot + 1) * DEBIT_SLOT_MS) / 1000);
  const nowS = Math.floor(now / 1000);
  return {
    key: k.debits(accountId, stamped.slot),
    field: stamped.random,
    // Never already past (EXPIREAT would delete the record), never beyond a day and an hour.
    expireAt: Math.min(Math.max(slotEnd + day + 3600, nowS + 3600), nowS + day + 3600 + 30),
  };
}

const SCRIPTS = [
  "admit",
  "top-up",
  "refund",
  "create-account",
  "verify-email",
  "set-tier",
  "revoke-key",
  "rate-limit",
  "idempotency-begin",
  "webhook-add",
  "custom-tool-add",
  "release-lock",
  "payment-claim",
  "session-touch",
  "set-workers",
  "relayer-nonce",
  "key-update",
  "spend-alert",
] as const;
const KEY_COUNTS: Record<(typeof SCRIPTS)[number], number> = {
  admit: 7,
  "top-up": 4,
  refund: 7,
  "create-account": 3,
  "verify-email": 3,
  "set-tier": 1,
  "revoke-key": 2,
  "rate-limit": 1,
  "idempotency-begin": 1,
  "webhook-add": 1,
  "custom-tool-add": 1,
  "release-lock": 1,
  "payment-claim": 2,
  "session-touch": 2,
  "set-workers": 1,
  "relayer-nonce": 1,
  "key-update": 2,
  "spend-alert": 1,
};

function loadScript(name: string, prelude: string): string {
  return `${prelude}\n${readFileSync(new URL(`../credits/lua/${name}.lua`, import.meta.url), "utf8")}`;
}

type ScriptRunner = (keys: string[], args: (string | number)[]) => Promise<unknown>;

interface RawAccount {
  id: string;
  email: string;
  email_verified: number;
  tier: string;
  balance: number;
  reference: number;
  created_at: number;
  allowance_at: number;
  plan_expires_at?: number;
  workers_url?: string;
  spend_window?: number;
  spend?: number;
  spend_alert?: number;
}

function toAccount(raw: RawAccount): AccountRecord {
  return {
    id: raw.id,
    email: raw.email === "" ? null : raw.email,
    emailVerified: Number(raw.email_verified) === 1,
    tier: raw.tier as TierName,
    balance: Number(raw.balance),
    reference: Number(raw.reference),
    createdAt: Number(raw.created_at),
    allowanceAt: Number(raw.allowance_at),
    planExpiresAt: Number(raw.plan_expires_at ?? 0),
    dedicatedWorkersUrl: raw.workers_url || null,
    spendAlert: Number(raw.spend_alert ?? 0) > 0 ? { credits: Number(raw.spend_alert) } : null,
    spend: { windowStart: Number(raw.spend_window ?? 0), credits: Number(raw.spend ?? 0) },
  };
}

function accountFromHash(h: Record<string, string>): AccountRecord | null {
  if (!h.id) return null;
  return toAccount(h as unknown as RawAccount);
}

/**
 * The key record's control fields, as the admission script reads them (`tools` as ",a,b," so a
 * lookup is one plain find; 0 or "" = none).
 */
function keyControlFields(key: KeyRecord): Record<string, string> {
  return {
    expires_at: String(key.expiresAt ?? 0),
    tools: key.allowedTools ? `,${key.allowedTools.join(",")},` : "",
    budget: String(key.budget?.credits ?? 0),
    budget_period: key.budget?.period ?? "",
  };
}

/** The listing's copy of a key: what `listKeys` adds on reading is not stored. */
function storedKey(key: KeyRecord): KeyRecord {
  const { lastUsedAt: _used, budgetSpent: _spent, ...stored } = key;
  return stored;
}

/** A ledger stream entry (fields as prelude.lua's `ledger_add` writes them). */
function ledgerEntryFrom([id, fields]: [string, string[]]): LedgerEntry {
  const f: Record<string, string> = {};
  for (let i = 0; i < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
  return {
    id,
    at: Number(f.at),
    kind: f.kind as LedgerKind,
    amount: Number(f.amount),
    balance: Number(f.balance),
    reason: f.reason ?? "",
    requestId: f.request_id ?? "",
    tool: f.tool ? f.tool : null,
    keyId: f.key ? f.key : null,
  };
}

/** cjson encodes an empty Lua table as `{}`; the events list is the one place that matters. */
function eventsFrom(raw: unknown): EventRecord[] {
  return Array.isArray(raw) ? raw.map(parseEventRecord) : [];
}

export interface RedisStoreOptions {
  url: string;
  keyPrefix: string;
  tiers: TierLimits;
  periodMs: number;
  /** How long a command may wait for a connection before failing with 503, instead of hanging. */
  commandTimeoutMs?: number;
  /** `url` is a node of a Redis Cluster. */
  cluster?: boolean;
  /** The windows of key budgets and the spend alert (default: UTC day, calendar month). */
  controlWindows?: ControlWindows;
}

/**
 * `promise`, or a "Command timed out" rejection when it has not settled `ms` after the call. The
 * verdict waits for the event loop's next I/O poll (setImmediate): a process whose loop was held
 * up by CPU work has its timers fire before it reads the replies that arrived meanwhile, and
 * ioredis's own `commandTimeout` then fails commands Redis had answered in time (spurious 503s
 * under load).
 */
function withinDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => setImmediate(() => reject(new Error("Command timed out"))), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

export class RedisStore implements Store {
  readonly redis: RedisConnection;
  private readonly run: Record<(typeof SCRIPTS)[number], ScriptRunner>;
  private readonly tiersJson: string;
  private everReady = false;

  constructor(private readonly options: RedisStoreOptions) {
    const redisOptions: RedisOptions = {
      keyPrefix: options.keyPrefix,
      // Fail fast while disconnected: callers get 503 store_unavailable instead of waiting.
      // The per-command deadline is ours (`call`), not ioredis's `commandTimeout`: see withinDeadline.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
      lazyConnect: false,
    };
    this.redis = connectRedis(options.url, options.cluster ?? false, redisOptions);
    this.redis.on("error", () => {
      /* surfaced per command as StoreUnavailableError; ioredis reconnects by itself */
    });
    this.tiersJson = JSON.stringify(options.tiers);
    const prelude = `local DEPLETED_MESSAGE = ${JSON.stringify(DEPLETED_MESSAGE)}\n${readFileSync(new URL("../credits/lua/prelude.lua", import.meta.url), "utf8")}`;
    const run = {} as Record<(typeof SCRIPTS)[number], ScriptRunner>;
    for (const name of SCRIPTS) {
      const command = `tg_${name.replace("-", "_")}`;
      this.redis.defineCommand(command, {
        numberOfKeys: KEY_COUNTS[name],
        lua: loadScript(name, prelude),
      });
      run[name] = (keys, args) =>
        (this.redis as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[command]!(
          ...keys,
          ...args,
        );
    }
    this.run = run;
  }

  /**
   * Until the first connection is made, commands wait for it (bounded); after that a lost
   * connection fails commands at once, so callers get a quick 503 instead of a hang.
   */
  private firstConnection: Promise<void> | null = null;
  private waitForFirstConnection(): Promise<void> {
    this.firstConnection ??= new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.firstConnection = null;
        reject(new StoreUnavailableError("Redis is not reachable"));
      }, this.options.commandTimeoutMs ?? 2000);
      this.redis.once("ready", () => {
        clearTimeout(timer);
        resolve();
      });
    });
    return this.firstConnection;
  }

  /** Connection-level failures become StoreUnavailableError (503); script errors stay bugs (500). */
  private async call<T>(fn: () => Promise<T>): Promise<T> {
    if (!this.everReady) {
      if (this.redis.status !== "ready") await this.waitForFirstConnection();
      this.everReady = true;
    } else if (this.redis.status !== "ready") {
      // Disconnected after having been connected: fail at once (a cluster client would queue).
      throw new StoreUnavailableError(`Redis is ${this.redis.status}`);
    }
    try {
      return await withinDeadline(fn(), this.options.commandTimeoutMs ?? 2000);
    } catch (err) {
      const message = String((err as Error)?.message ?? err);
      if (
        /Stream isn't writeable|Connection is closed|Command timed out|ECONNREFUSED|max retries|enableOfflineQueue|ETIMEDOUT|ECONNRESET/i.test(
          message,
        )
      ) {
        throw new StoreUnavailableError(message);
      }
      throw err;
    }
  }

  private async script<T>(
    name: (typeof SCRIPTS)[number],
    keys: string[],
    args: (string | number)[],
  ): Promise<T> {
    const raw = await this.call(() => this.run[name](keys, args));
    return (
      typeof raw === "string" && (raw.startsWith("{") || raw.startsWith("["))
        ? JSON.parse(raw)
        : raw
    ) as T;
  }

  /** Records that an account has events waiting; a separate command because the index lies outside the account's slot. */
  private async markOutbox(accountId: string, events: unknown[]): Promise<void> {
    if (events.length > 0) await this.call(() => this.redis.sadd(k.outboxAccounts(), accountId));
  }

  async createAccount(
    account: NewAccount,
    grant: CreditChange & { amount: number },
    events: EventRecord[],
  ): Promise<AccountRecord> {
    const raw = await this.script<RawAccount>(
      "create-account",
      [k.account(account.id), k.ledger(account.id), k.outbox(account.id)],
      [
        account.id,
        account.email ?? "",
        account.tier,
        grant.amount,
        grant.reason,
        grant.requestId,
        JSON.stringify(events),
      ],
    );
    const created = toAccount(raw);
    await this.call(() => this.redis.zadd(k.accounts(), created.createdAt, account.id));
    await this.markOutbox(account.id, events);
    return created;
  }

  async getAccount(id: string): Promise<AccountRecord | null> {
    return accountFromHash(await this.call(() => this.redis.hgetall(k.account(id))));
  }

  async listAccounts(page: { cursor?: string; limit: number }): Promise<Page<AccountRecord>> {
    // Cursor = the last id seen; order = creation time, then id (ZSET order).
    let start = 0;
    if (page.cursor) {
      const rank = await this.call(() => this.redis.zrank(k.accounts(), page.cursor!));
      if (rank === null) throw new InvalidCursorError(`no account ${page.cursor}`);
      start = rank + 1;
    }
    const ids = await this.call(() =>
      this.redis.zrange(k.accounts(), String(start), String(start + page.limit)),
    );
    // One command per account (each in its own slot), all in flight at once.
    const hashes = await this.call(() =>
      Promise.all(ids.slice(0, page.limit).map((id) => this.redis.hgetall(k.account(id)))),
    );
    const items = hashes.map(accountFromHash).filter((a): a is AccountRecord => a !== null);
    return { items, nextCursor: ids.length > page.limit ? (ids[page.limit - 1] ?? null) : null };
  }

  async claimEmail(email: string, accountId: string): Promise<boolean> {
    const key = k.email(email);
    if ((await this.call(() => this.redis.set(key, accountId, "NX"))) === "OK") return true;
    // A claim left behind by a sign-up that died before creating its account may be taken over.
    const holder = await this.call(() => this.redis.get(key));
    if (holder && (await this.call(() => this.redis.exists(k.account(holder)))) === 0) {
      return (await this.call(() => this.redis.set(key, accountId, "XX"))) === "OK";
    }
    return false;
  }

  async setTier(accountId: string, tier: TierName): Promise<AccountRecord | null> {
    const raw = await this.script<RawAccount | null>("set-tier", [k.account(accountId)], [tier]);
    return raw ? toAccount(raw) : null;
  }

  async setDedicatedWorkers(accountId: string, url: string | null): Promise<AccountRecord | null> {
    const raw = await this.script<RawAccount | null>(
      "set-workers",
      [k.account(accountId)],
      [url ?? ""],
    );
    return raw ? toAccount(raw) : null;
  }

  async verifyEmail(accountId: string, grant: CreditChange & { amount: number }) {
    return this.script<"verified" | "already_verified" | "not_found">(
      "verify-email",
      [k.account(accountId), k.ledger(accountId), k.operation(accountId, grant.requestId)],
      [grant.amount, grant.reason, grant.requestId, this.options.periodMs, OPERATION_TTL_SECONDS],
    );
  }

  async addKey(key: KeyRecord): Promise<void> {
    await this.call(() =>
      this.redis
        .multi()
        .hset(k.keyRecord(key.accountId, key.hash), {
          id: key.id,
          revoked_at: String(key.revokedAt ?? 0),
          ...keyControlFields(key),
        })
        .hset(k.keyList(key.accountId), key.id, JSON.stringify(storedKey(key)))
        .exec(),
    );
  }

  async listKeys(accountId: string): Promise<KeyRecord[]> {
    const all = (await this.call(() => this.redis.hvals(k.keyList(accountId)))).map(
      (raw) => JSON.parse(raw) as KeyRecord,
    );
    // The admission script keeps `last_used_at` on each key's own record (the one it reads),
    // and each budgeted key's spend in the account's key-spend hash.
    const [lastUsed, spend] = await this.call(() =>
      Promise.all([
        Promise.all(
          all.map((key) => this.redis.hget(k.keyRecord(accountId, key.hash), "last_used_at")),
        ),
        this.redis.hgetall(k.keySpend(accountId)),
      ]),
    );
    const now = Date.now();
    return all
      .map((key, i) => ({
        ...withControls(key),
        lastUsedAt: lastUsed[i] ? Number(lastUsed[i]) : null,
        budgetSpent: this.spentInWindow(key, spend[key.id], now),
      }))
      .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  }

  /** A key's spend as the key-spend hash holds it ("<window start>:<credits>"), if that window is the current one. */
  private spentInWindow(key: KeyRecord, raw: string | undefined, now: number): number {
    if (!key.budget || !raw) return 0;
    const [start, spent] = raw.split(":").map(Number);
    const window = controlWindow(now, key.budget.period, this.windows);
    return start === window.start ? (spent ?? 0) : 0;
  }

  private get windows(): ControlWindows {
    return this.options.controlWindows ?? CALENDAR_WINDOWS;
  }

  async updateKey(accountId: string, keyId: string, update: KeyUpdate): Promise<KeyRecord | null> {
    const raw = await this.call(() => this.redis.hget(k.keyList(accountId), keyId));
    if (!raw) return null;
    const current = JSON.parse(raw) as KeyRecord;
    const changes = Object.fromEntries(
      Object.entries(update).filter(([, value]) => value !== undefined),
    );
    const updated: KeyRecord = { ...current, ...changes };
    // One script: the listing's copy and the record the admission reads change together.
    const stored = await this.script<string | null>(
      "key-update",
      [k.keyList(accountId), k.keyRecord(accountId, current.hash)],
      [keyId, JSON.stringify(changes), ...Object.entries(keyControlFields(updated)).flat()],
    );
    if (stored === null) return null;
    return (await this.listKeys(accountId)).find((key) => key.id === keyId) ?? null;
  }

  async setSpendAlert(
    accountId: string,
    alert: { credits: number } | null,
  ): Promise<AccountRecord | null> {
    const raw = await this.script<RawAccount | null>(
      "spend-alert",
      [k.account(accountId)],
      [alert?.credits ?? 0],
    );
    return raw ? toAccount(raw) : null;
  }

  async revokeKey(
    accountId: string,
    keyId: string,
    graceMs: number,
    options: { keepOneActive?: boolean } = {},
  ): Promise<RevokeOutcome> {
    const raw = await this.call(() => this.redis.hget(k.keyList(accountId), keyId));
    if (!raw) return { status: "not_found" };
    const { hash } = JSON.parse(raw) as KeyRecord;
    const outcome = await this.script<RevokeOutcome>(
      "revoke-key",
      [k.keyList(accountId), k.keyRecord(accountId, hash)],
      [keyId, graceMs, options.keepOneActive ? 1 : 0],
    );
    if (outcome.status !== "not_found") outcome.key.lastUsedAt ??= null;
    return outcome;
  }

  async admit(request: AdmitRequest): Promise<AdmitOutcome> {
    const id = request.accountId;
    const record = debitRecord(id, request.requestId);
    const result = await this.script<{
      status: AdmitOutcome["status"];
      account?: RawAccount;
      key_id?: string | null;
      key_limited?: boolean;
      expires_at?: number;
      tools?: string;
      budget?: {
        credits: number;
        period: "day" | "month";
        spent: number;
        window_start: number;
        resets_at: number;
      };
      rate?: RateState;
      charged?: boolean;
      events?: unknown;
    }>(
      "admit",
      [
        k.account(id),
        request.keyHash ? k.keyRecord(id, request.keyHash) : k.account(id),
        k.rateLog(id),
        k.ledger(id),
        record.key,
        k.outbox(id),
        k.keySpend(id),
      ],
      [
        this.tiersJson,
        request.keyHash ? 1 : 0,
        request.cost,
        request.requestId,
        request.tool ?? "",
        request.reason,
        newEventId(),
        newEventId(),
        new Date().toISOString(),
        RATE_WINDOW_MS,
        this.options.periodMs,
        record.expireAt,
        request.countRequest === false ? 0 : (request.requests ?? 1),
        KEY_USE_RESOLUTION_MS,
        record.field,
        newEventId(),
        this.windows.dayMs,
        this.windows.monthMs,
      ],
    );
    switch (result.status) {
      case "invalid_key":
      case "revoked":
        return { status: result.status };
      case "expired":
        return { status: "expired", expiresAt: Number(result.expires_at) };
      case "tool_not_allowed":
        return {
          status: "tool_not_allowed",
          allowedTools: result.tools!.split(",").filter(Boolean),
        };
      case "key_budget_exceeded": {
        const b = result.budget!;
        return {
          status: "key_budget_exceeded",
          account: toAccount(result.account!),
          rate: result.rate!,
          budget: {
            credits: b.credits,
            period: b.period,
            spent: b.spent,
            windowStart: b.window_start,
            resetsAt: b.resets_at,
          },
        };
      }
      case "rate_limited":
      case "insufficient_credits":
        return { status: result.status, account: toAccount(result.account!), rate: result.rate! };
      case "ok": {
        const events = eventsFrom(result.events);
        await this.markOutbox(id, events);
        return {
          status: "ok",
          account: toAccount(result.account!),
          keyId: result.key_id ?? null,
          keyLimited: result.key_limited === true,
          rate: result.rate!,
          charged: result.charged === true,
          events,
        };
      }
    }
  }

  async topUp(
    accountId: string,
    kind: TopUpKind,
    grant: CreditChange & { amount: number; rearm?: boolean },
    events: EventRecord[] = [],
    plan?: PlanChange,
  ) {
    const result = await this.script<{ status: string; account?: RawAccount }>(
      "top-up",
      [
        k.account(accountId),
        k.ledger(accountId),
        k.operation(accountId, grant.requestId),
        k.outbox(accountId),
      ],
      [
        grant.amount,
        kind,
        grant.reason,
        grant.requestId,
        OPERATION_TTL_SECONDS,
        JSON.stringify(events),
        plan?.tier ?? "",
        plan?.periodMs ?? 0,
        grant.rearm === false ? 0 : 1,
      ],
    );
    if (result.status === "not_found") return null;
    if (result.status === "applied") await this.markOutbox(accountId, events);
    return { applied: result.status === "applied", account: toAccount(result.account!) };
  }

  async refund(accountId: string, change: RefundChange, events: EventRecord[] = []) {
    const idempotencyKey = change.idempotencyKey ?? null;
    const record = debitRecord(accountId, change.requestId);
    const keyHash = change.keyHash ?? null;
    const result = await this.script<
      | { status: "refunded"; amount: number; balance: number }
      | { status: "already_refunded" | "not_charged" }
    >(
      "refund",
      [
        k.account(accountId),
        k.ledger(accountId),
        record.key,
        k.outbox(accountId),
        k.idempotency(accountId, idempotencyKey ?? ""),
        keyHash ? k.keyRecord(accountId, keyHash) : k.account(accountId),
        k.keySpend(accountId),
      ],
      [
        change.requestId,
        change.reason,
        JSON.stringify(events),
        idempotencyKey === null ? 0 : 1,
        record.field,
        change.tool ?? "",
        keyHash ? 1 : 0,
        debitedNoLaterThan(change.requestId),
      ],
    );
    if (result.status === "refunded") await this.markOutbox(accountId, events);
    return result;
  }

  async beginIdempotent(
    accountId: string,
    key: string,
    claim: IdempotencyClaim,
  ): Promise<IdempotencyState> {
    return this.script<IdempotencyState>(
      "idempotency-begin",
      [k.idempotency(accountId, key)],
      [claim.fingerprint, claim.leaseMs, claim.requestId, claim.ttlSeconds * 1000],
    );
  }

  async completeIdempotent(
    accountId: string,
    key: string,
    response: StoredResponse,
    ttlSeconds: number,
  ): Promise<void> {
    const record = k.idempotency(accountId, key);
    await this.call(() =>
      this.redis
        .multi()
        .hset(record, "state", "completed", "response", JSON.stringify(response))
        .expire(record, ttlSeconds)
        .exec(),
    );
  }

  async abandonIdempotent(accountId: string, key: string): Promise<void> {
    await this.call(() => this.redis.del(k.idempotency(accountId, key)));
  }

  async ledger(
    accountId: string,
    page: { cursor?: string; limit: number },
  ): Promise<Page<LedgerEntry>> {
    // Newest first; the cursor is the last stream id seen, excluded with "(".
    if (page.cursor !== undefined && !isLedgerId(page.cursor))
      throw new InvalidCursorError(`not a ledger id: ${page.cursor}`);
    const end = page.cursor !== undefined ? `(${page.cursor}` : "+";
    const rows = await this.call(() =>
      this.redis.xrevrange(k.ledger(accountId), end, "-", "COUNT", page.limit + 1),
    ).catch((err: Error) => {
      // Well-formed but out of range (past 2^64-1, or "(0-0"): Redis refuses it.
      if (/Invalid stream ID|invalid start ID/i.test(err.message))
        throw new InvalidCursorError(err.message);
      throw err;
    });
    const items = rows.slice(0, page.limit).map(ledgerEntryFrom);
    return { items, nextCursor: rows.length > page.limit ? (items.at(-1)?.id ?? null) : null };
  }

  async oldestLedger(accountId: string, limit: number): Promise<LedgerEntry[]> {
    return (
      await this.call(() => this.redis.xrange(k.ledger(accountId), "-", "+", "COUNT", limit))
    ).map(ledgerEntryFrom);
  }

  async trimLedger(accountId: string, throughId: string): Promise<void> {
    // MINID keeps ids >= the threshold: the one just after `throughId`. The stream key stays
    // (empty), so its last id, and the ids after it, keep rising.
    const [ms, seq] = throughId.split("-").map(BigInt) as [bigint, bigint];
    await this.call(() => this.redis.xtrim(k.ledger(accountId), "MINID", `${ms}-${seq + 1n}`));
  }

  async ledgerBacklog(page: { cursor?: string; limit: number }): Promise<Page<LedgerBacklog>> {
    // The cursor is a rank in the account list (creation order): accounts are only ever appended.
    const start = page.cursor ? Number(page.cursor) : 0;
    const accounts = await this.call(() =>
      this.redis.zrange(k.accounts(), String(start), String(start + page.limit - 1)),
    );
    // Each account's oldest entry and oldest logged event, one command each per account (each
    // account in its own slot), all in flight at once.
    const [oldest, oldestEvents] = await this.call(() =>
      Promise.all([
        Promise.all(accounts.map((id) => this.redis.xrange(k.ledger(id), "-", "+", "COUNT", 1))),
        Promise.all(accounts.map((id) => this.redis.zrange(k.events(id), "0", "0", "WITHSCORES"))),
      ]),
    );
    const items = accounts.flatMap((accountId, i) => {
      const times = [oldest[i]?.[0]?.[0].split("-")[0], oldestEvents[i]?.[1]]
        .filter((t) => t !== undefined)
        .map(Number);
      return times.length > 0 ? [{ accountId, oldestAt: Math.min(...times) }] : [];
    });
    return {
      items,
      nextCursor: accounts.length === page.limit ? String(start + page.limit) : null,
    };
  }

  async hitRateLimit(bucket: string, limit: number, windowMs: number, member: string) {
    return this.script<RateState & { allowed: boolean }>(
      "rate-limit",
      [k.bucket(bucket)],
      [limit, windowMs, member],
    );
  }

  async releaseRateLimit(bucket: string, member: string): Promise<void> {
    await this.call(() => this.redis.zrem(k.bucket(bucket), member));
  }

  async appendEvents(accountId: string, events: EventRecord[]): Promise<void> {
    if (events.length === 0) return;
    const tx = this.redis.multi();
    for (const e of events) {
      tx.xadd(
        k.outbox(accountId),
        "*",
        "id",
        e.id,
        "event",
        e.event,
        "timestamp",
        e.timestamp,
        "account_id",
        e.account_id,
        "data",
        JSON.stringify(e.data),
      );
    }
    await this.call(() => tx.exec());
    await this.markOutbox(accountId, events);
  }

  async readOutbox(accountId: string, limit: number): Promise<EventRecord[]> {
    const rows = await this.call(() =>
      this.redis.xrange(k.outbox(accountId), "-", "+", "COUNT", limit),
    );
    return rows.map(([, fields]) => {
      const f: Record<string, string> = {};
      for (let i = 0; i < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
      return parseEventRecord({
        id: f.id,
        event: f.event,
        timestamp: f.timestamp,
        account_id: f.account_id,
        data: JSON.parse(f.data ?? "{}"),
      });
    });
  }

  async ackOutbox(accountId: string, eventIds: string[]): Promise<void> {
    if (eventIds.length > 0) {
      const wanted = new Set(eventIds);
      const rows = await this.call(() => this.redis.xrange(k.outbox(accountId), "-", "+"));
      const streamIds = rows
        .filter(([, f]) => wanted.has(f[f.indexOf("id") + 1]!))
        .map(([id]) => id);
      if (streamIds.length > 0)
        await this.call(() => this.redis.xdel(k.outbox(accountId), ...streamIds));
    }
    // Unindex first, then look: an event appended meanwhile is seen here or re-indexes itself.
    await this.call(() => this.redis.srem(k.outboxAccounts(), accountId));
    if ((await this.call(() => this.redis.xlen(k.outbox(accountId)))) > 0)
      await this.call(() => this.redis.sadd(k.outboxAccounts(), accountId));
  }

  async logEvents(accountId: string, events: EventRecord[], keep: number | null): Promise<void> {
    if (events.length === 0) return;
    // A sorted set of the records: several relays logging the same event add it once.
    const key = k.events(accountId);
    const members = events.flatMap((e) => [Date.parse(e.timestamp), JSON.stringify(e)]);
    const tx = this.redis.multi().zadd(key, ...members);
    if (keep !== null) tx.zremrangebyrank(key, 0, -(keep + 1));
    await this.call(() => tx.exec());
  }

  async oldestLoggedEvents(accountId: string, limit: number): Promise<EventRecord[]> {
    return (
      await this.call(() => this.redis.zrange(k.events(accountId), "0", String(limit - 1)))
    ).map((raw) => parseEventRecord(JSON.parse(raw)));
  }

  async forgetLoggedEvents(accountId: string, events: EventRecord[]): Promise<void> {
    if (events.length === 0) return;
    // By id among the members of the batch's time range: a member is removed only if it is one
    // of these events (a relay may have logged others meanwhile, with the same times).
    const ids = new Set(events.map((e) => e.id));
    const times = events.map((e) => Date.parse(e.timestamp));
    const key = k.events(accountId);
    const members = await this.call(() =>
      this.redis.zrangebyscore(key, Math.min(...times), Math.max(...times)),
    );
    const gone = members.filter((raw) => ids.has((JSON.parse(raw) as { id: string }).id));
    if (gone.length > 0) await this.call(() => this.redis.zrem(key, ...gone));
  }

  async listEvents(accountId: string, limit: number): Promise<EventRecord[]> {
    return (await this.call(() => this.redis.zrevrange(k.events(accountId), 0, limit - 1))).map(
      (raw) => parseEventRecord(JSON.parse(raw)),
    );
  }

  async rebuildOutboxIndex(): Promise<number> {
    const prefix = this.options.keyPrefix;
    // SCAN walks one server: on a cluster, every master holds its share of the accounts.
    const servers = this.redis instanceof Cluster ? this.redis.nodes("master") : [this.redis];
    let found = 0;
    for (const server of servers) {
      let cursor = "0";
      do {
        // SCAN patterns are not prefixed by ioredis: match the full key.
        const [next, keys] = await this.call(() =>
          server.scan(cursor, "MATCH", `${prefix}{acct_*}:outbox`, "COUNT", 1000),
        );
        cursor = next;
        for (const key of keys) {
          const accountId = key.slice(prefix.length + 1, key.indexOf("}"));
          if ((await this.call(() => this.redis.xlen(k.outbox(accountId)))) > 0) {
            await this.call(() => this.redis.sadd(k.outboxAccounts(), accountId));
            found++;
          }
        }
      } while (cursor !== "0");
    }
    return found;
  }

  async outboxAccounts(): Promise<string[]> {
    return this.call(() => this.redis.smembers(k.outboxAccounts()));
  }

  async addCustomTool(tool: CustomToolRecord, cap: number): Promise<"added" | "exists" | "cap"> {
    return this.script<"added" | "exists" | "cap">(
      "custom-tool-add",
      [k.customTools(tool.accountId)],
      [tool.name, JSON.stringify(tool), cap],
    );
  }

  async getCustomTool(accountId: string, name: string): Promise<CustomToolRecord | null> {
    const raw = await this.call(() => this.redis.hget(k.customTools(accountId), name));
    return raw ? (JSON.parse(raw) as CustomToolRecord) : null;
  }

  async getCustomToolWithTier(
    accountId: string,
    name: string,
  ): Promise<{ tool: CustomToolRecord; tier: TierName | null } | null> {
    // Both keys are in the account's slot: one pipeline, one round trip (on a cluster too).
    const replies = await this.call(() =>
      this.redis
        .pipeline()
        .hget(k.customTools(accountId), name)
        .hget(k.account(accountId), "tier")
        .exec(),
    );
    const [[toolErr, raw], [tierErr, tier]] = replies as [
      [Error | null, string | null],
      [Error | null, string | null],
    ];
    if (toolErr || tierErr) throw toolErr ?? tierErr;
    return raw
      ? { tool: JSON.parse(raw) as CustomToolRecord, tier: (tier as TierName | null) ?? null }
      : null;
  }

  async listCustomTools(accountId: string): Promise<CustomToolRecord[]> {
    const all = await this.call(() => this.redis.hvals(k.customTools(accountId)));
    return all
      .map((raw) => JSON.parse(raw) as CustomToolRecord)
      .sort((a, b) => a.createdAt - b.createdAt || a.name.localeCompare(b.name));
  }

  async deleteCustomTool(accountId: string, name: string): Promise<boolean> {
    return (await this.call(() => this.redis.hdel(k.customTools(accountId), name))) === 1;
  }

  async addWebhook(webhook: WebhookRecord, cap: number): Promise<boolean> {
    return (
      (await this.script<number>(
        "webhook-add",
        [k.webhooks(webhook.ownerId)],
        [webhook.id, JSON.stringify(webhook), cap],
      )) === 1
    );
  }

  async listWebhooks(ownerId: string): Promise<WebhookRecord[]> {
    const all = await this.call(() => this.redis.hvals(k.webhooks(ownerId)));
    return all
      .map((raw) => JSON.parse(raw) as WebhookRecord)
      .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  }

  async getWebhook(ownerId: string, id: string): Promise<WebhookRecord | null> {
    const raw = await this.call(() => this.redis.hget(k.webhooks(ownerId), id));
    return raw ? (JSON.parse(raw) as WebhookRecord) : null;
  }

  async putWebhook(webhook: WebhookRecord): Promise<void> {
    await this.call(() =>
      this.redis.hset(k.webhooks(webhook.ownerId), webhook.id, JSON.stringify(webhook)),
    );
  }

  async deleteWebhook(ownerId: string, id: string): Promise<boolean> {
    const [[, removed] = []] =
      (await this.call(() =>
        this.redis.multi().hdel(k.webhooks(ownerId), id).del(k.deliveries(ownerId, id)).exec(),
      )) ?? [];
    return removed === 1;
  }

  async recordDelivery(
    ownerId: string,
    webhookId: string,
    attempt: DeliveryAttempt,
    keep: number,
  ): Promise<void> {
    const key = k.deliveries(ownerId, webhookId);
    await this.call(() =>
      this.redis
        .multi()
        .lpush(key, JSON.stringify(attempt))
        .ltrim(key, 0, keep - 1)
        .exec(),
    );
  }

  async listDeliveries(
    ownerId: string,
    webhookId: string,
    limit: number,
  ): Promise<DeliveryAttempt[]> {
    return (
      await this.call(() => this.redis.lrange(k.deliveries(ownerId, webhookId), 0, limit - 1))
    ).map((raw) => JSON.parse(raw) as DeliveryAttempt);
  }

  async claimPayment(record: PaymentRecord): Promise<PaymentRecord | null> {
    return (
      (await this.script<PaymentRecord | null>(
        "payment-claim",
        [k.payment(record.id), k.openPayments()],
        [record.id, JSON.stringify(record)],
      )) ?? null
    );
  }

  async savePayment(record: PaymentRecord): Promise<void> {
    const tx = this.redis.multi();
    // A settled record is kept for its retention window only; an open one until it is finished.
    if (record.state === "settled" && record.expiresAt)
      tx.set(k.payment(record.id), JSON.stringify(record), "PXAT", record.expiresAt);
    else tx.set(k.payment(record.id), JSON.stringify(record));
    if (record.state === "settled") tx.srem(k.openPayments(), record.id);
    else tx.sadd(k.openPayments(), record.id);
    await this.call(() => tx.exec());
  }

  async claimPaymentService(id: string, expiresAt: number): Promise<boolean> {
    return (
      (await this.call(() => this.redis.set(k.paymentServed(id), "1", "PXAT", expiresAt, "NX"))) ===
      "OK"
    );
  }

  async getPayment(id: string): Promise<PaymentRecord | null> {
    const raw = await this.call(() => this.redis.get(k.payment(id)));
    return raw ? (JSON.parse(raw) as PaymentRecord) : null;
  }

  async releasePayment(id: string): Promise<void> {
    await this.call(() => this.redis.multi().del(k.payment(id)).srem(k.openPayments(), id).exec());
  }

  async openPayments(): Promise<PaymentRecord[]> {
    const ids = await this.call(() => this.redis.smembers(k.openPayments()));
    if (ids.length === 0) return [];
    const raw = await this.call(() => this.redis.mget(...ids.map(k.payment)));
    return raw.filter((r): r is string => r !== null).map((r) => JSON.parse(r) as PaymentRecord);
  }

  async saveNonce(name: string, ttlMs: number): Promise<void> {
    await this.call(() => this.redis.set(`nonce:${name}`, "1", "PX", ttlMs));
  }

  async consumeNonce(name: string): Promise<boolean> {
    return (await this.call(() => this.redis.del(`nonce:${name}`))) === 1;
  }

  async keepFirst(name: string, candidate: string): Promise<string> {
    // One transaction: SET NX, then read whichever value won.
    const replies = await this.call(() =>
      this.redis.multi().set(k.setting(name), candidate, "NX").get(k.setting(name)).exec(),
    );
    const value = replies?.[1]?.[1];
    if (typeof value !== "string") throw new Error(`could not keep the setting ${name}`);
    return value;
  }

  async acquireLock(name: string, ttlMs: number): Promise<string | null> {
    const token = newEventId();
    return (await this.call(() => this.redis.set(`lock:${name}`, token, "PX", ttlMs, "NX"))) ===
      "OK"
      ? token
      : null;
  }

  async releaseLock(name: string, token: string): Promise<void> {
    await this.script("release-lock", [`lock:${name}`], [token]);
  }

  async takeRelayerNonce(name: string, start: number | null): Promise<number | null> {
    const nonce = await this.script<number | null>(
      "relayer-nonce",
      [k.relayerNonce(name)],
      ["take", start === null ? "" : start],
    );
    return nonce === null ? null : Number(nonce);
  }

  async peekRelayerNonce(name: string): Promise<number | null> {
    const next = await this.script<number | null>(
      "relayer-nonce",
      [k.relayerNonce(name)],
      ["peek", ""],
    );
    return next === null ? null : Number(next);
  }

  async raiseRelayerNonce(name: string, next: number): Promise<number> {
    return Number(
      await this.script<number>("relayer-nonce", [k.relayerNonce(name)], ["raise", next]),
    );
  }

  async accountIdByEmail(email: string): Promise<string | null> {
    return this.call(() => this.redis.get(k.email(email)));
  }

  async saveOnce(name: string, value: string, ttlMs: number): Promise<void> {
    await this.call(() => this.redis.set(k.once(name), value, "PX", ttlMs));
  }

  async takeOnce(name: string): Promise<string | null> {
    // GET and DEL in one transaction: of two readers racing, one gets the value, the other null.
    const replies = await this.call(() =>
      this.redis.multi().get(k.once(name)).del(k.once(name)).exec(),
    );
    const value = replies?.[0]?.[1];
    return typeof value === "string" ? value : null;
  }

  async putSsoConnection(
    connection: SsoConnectionRecord,
  ): Promise<{ status: "saved" } | { status: "domain_taken"; domain: string }> {
    const { accountId } = connection;
    const before = await this.getSsoConnection(accountId);
    // Each domain is a global index key (like an e-mail's), claimed with SET NX; a refusal gives
    // back the claims this call made, so a failed save changes nothing.
    const claimedNow: string[] = [];
    for (const domain of connection.emailDomains) {
      const claimed = await this.call(() => this.redis.set(k.ssoDomain(domain), accountId, "NX"));
      if (claimed === "OK") {
        claimedNow.push(domain);
        continue;
      }
      const holder = await this.call(() => this.redis.get(k.ssoDomain(domain)));
      if (holder === accountId) continue;
      await this.releaseSsoDomains(accountId, claimedNow);
      return { status: "domain_taken", domain };
    }
    await this.call(() => this.redis.set(k.ssoConnection(accountId), JSON.stringify(connection)));
    const dropped = (before?.emailDomains ?? []).filter(
      (d) => !connection.emailDomains.includes(d),
    );
    await this.releaseSsoDomains(accountId, dropped);
    return { status: "saved" };
  }

  /** Releases domains this account holds (compare-and-delete: never another account's claim). */
  private async releaseSsoDomains(accountId: string, domains: string[]): Promise<void> {
    for (const domain of domains)
      await this.script("release-lock", [k.ssoDomain(domain)], [accountId]);
  }

  async getSsoConnection(accountId: string): Promise<SsoConnectionRecord | null> {
    const raw = await this.call(() => this.redis.get(k.ssoConnection(accountId)));
    return raw ? (JSON.parse(raw) as SsoConnectionRecord) : null;
  }

  async deleteSsoConnection(accountId: string): Promise<boolean> {
    const connection = await this.getSsoConnection(accountId);
    if (!connection) return false;
    await this.call(() => this.redis.del(k.ssoConnection(accountId)));
    await this.releaseSsoDomains(accountId, connection.emailDomains);
    return true;
  }

  async accountIdBySsoDomain(domain: string): Promise<string | null> {
    return this.call(() => this.redis.get(k.ssoDomain(domain)));
  }

  async createSession(session: SessionRecord, idleMs: number): Promise<void> {
    // The epoch is read first: a "sign out everywhere" landing between the two steps ends this
    // session too (its epoch is then older), which is the safe side.
    const epoch = (await this.call(() => this.redis.get(k.sessionEpoch(session.accountId)))) ?? "0";
    const key = k.session(session.accountId, session.id);
    const lifetime = Math.max(1, Math.min(idleMs, session.expiresAt - Date.now()));
    await this.call(() =>
      this.redis
        .multi()
        .hset(key, {
          account_id: session.accountId,
          csrf: session.csrfToken,
          created_at: session.createdAt,
          expires_at: session.expiresAt,
          via: session.via,
          epoch,
        })
        .pexpire(key, lifetime)
        .exec(),
    );
  }

  async touchSession(accountId: string, id: string, idleMs: number): Promise<SessionRecord | null> {
    const raw = await this.script<Record<string, string> | null>(
      "session-touch",
      [k.session(accountId, id), k.sessionEpoch(accountId)],
      [Date.now(), idleMs],
    );
    if (!raw) return null;
    return {
      id,
      accountId: raw.account_id!,
      csrfToken: raw.csrf!,
      createdAt: Number(raw.created_at),
      expiresAt: Number(raw.expires_at),
      via: raw.via as SessionRecord["via"],
    };
  }

  async endSession(accountId: string, id: string): Promise<void> {
    await this.call(() => this.redis.del(k.session(accountId, id)));
  }

  async endAccountSessions(accountId: string): Promise<void> {
    // Every session records the epoch it was opened in; a newer epoch ends them all at their next use.
    await this.call(() => this.redis.incr(k.sessionEpoch(accountId)));
  }

  followLedger(accountId: string): LedgerFollower {
    // A blocking read holds its connection, so each follower gets its own, given up on close.
    const connection = connectRedis(this.options.url, this.options.cluster ?? false, {
      keyPrefix: this.options.keyPrefix,
      enableOfflineQueue: true,
      maxRetriesPerRequest: 1,
      retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
    });
    connection.on("error", () => {
      /* the reader sees the failed read and ends its stream */
    });
    return {
      async next(afterId, waitMs) {
        const reply = await connection.xread(
          "BLOCK",
          waitMs,
          "STREAMS",
          k.ledger(accountId),
          afterId,
        );
        return reply?.[0]?.[1].map(ledgerEntryFrom) ?? [];
      },
      async close() {
        connection.disconnect();
      },
    };
  }

  async ping(): Promise<void> {
    await this.call(() => this.redis.ping());
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
