/**
 * Accounts on Redis: one hash per account (`{acct_…}:account`), created with its first grant by a
 * script; the account list (`accounts`, by creation time) and e-mail claims (`email:<address>`)
 * are global indexes outside the account's slot, written beside its scripts.
 */
import type { TierName } from "../../accounts/tiers.js";
import { planInForce } from "../../credits/rules.js";
import type { EventRecord } from "../../events/types.js";
import { type RedisContext, redisKey } from "../redis-context.js";
import {
  type AccountRecord,
  type CreditChange,
  InvalidCursorError,
  type NewAccount,
  OPERATION_TTL_SECONDS,
  type Page,
} from "../types.js";
import { type AccountStore, EMAIL_CLAIM_SETTLE_MS, emailClaim } from "./index.js";

/** The account hash as the scripts keep it (and return it, JSON-encoded). */
export interface RawAccount {
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

/** An account as stored, its plan as it stands now (credits/rules.ts `planInForce`). */
export function toAccount(raw: RawAccount): AccountRecord {
  return planInForce(storedAccount(raw), Date.now());
}

function storedAccount(raw: RawAccount): AccountRecord {
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

export function redisAccounts({
  redis,
  call,
  script,
  scriptWithIndexes,
  together,
  options,
}: RedisContext): AccountStore {
  /** Each account's hash (each in its own slot), all in one request. */
  const getAccounts = async (ids: string[]): Promise<(AccountRecord | null)[]> => {
    const [hashes] = await together(
      ids.map(
        (id) =>
          ({ on }) =>
            on.hgetall(redisKey.account(id)),
      ),
    );
    return (hashes as Record<string, string>[]).map(accountFromHash);
  };

  return {
    async createAccount(
      account: NewAccount,
      grant: CreditChange & { amount: number },
      events: EventRecord[],
    ): Promise<AccountRecord> {
      // Two global indexes, independent of each other, written after the account (one round
      // trip on one Redis node). The accounts index orders by creation as this process saw it
      // (the account's own created_at is Redis's clock): the same moment within clock skew.
      const raw = await scriptWithIndexes<RawAccount>(
        "create-account",
        [redisKey.account(account.id), redisKey.ledger(account.id), redisKey.outbox(account.id)],
        [
          account.id,
          account.email ?? "",
          account.tier,
          grant.amount,
          grant.reason,
          grant.requestId,
          JSON.stringify(events),
        ],
        {
          after: (writes) => {
            writes.listAccount(account.id, Date.now());
            writes.outbox(account.id, events);
          },
        },
      );
      return toAccount(raw);
    },

    async getAccount(id: string): Promise<AccountRecord | null> {
      return accountFromHash(await call(() => redis.hgetall(redisKey.account(id))));
    },

    getAccounts,

    async listAccounts(page: { cursor?: string; limit: number }): Promise<Page<AccountRecord>> {
      // Cursor = the last id seen; order = creation time, then id (ZSET order). An empty cursor
      // names no account, as in the memory store: only no cursor starts from the top.
      let start = 0;
      if (page.cursor !== undefined) {
        const rank = await call(() => redis.zrank(redisKey.accounts(), page.cursor!));
        if (rank === null) throw new InvalidCursorError(`no account ${page.cursor}`);
        start = rank + 1;
      }
      const ids = await call(() =>
        redis.zrange(redisKey.accounts(), String(start), String(start + page.limit)),
      );
      const items = (await getAccounts(ids.slice(0, page.limit))).filter(
        (a): a is AccountRecord => a !== null,
      );
      return { items, nextCursor: ids.length > page.limit ? (ids[page.limit - 1] ?? null) : null };
    },

    async claimEmail(email: string, accountId: string, now: number): Promise<boolean> {
      const key = redisKey.email(email);
      const claim = emailClaim.encode(accountId, now);
      if ((await call(() => redis.set(key, claim, "NX"))) === "OK") return true;
      // A claim left behind by a sign-up that died before creating its account may be taken over,
      // once it is old enough not to be a sign-up still under way, and only as it was read: of two
      // sign-ups taking over the same claim, one wins (compare-and-set.lua).
      const held = await call(() => redis.get(key));
      if (held === null) return false; // released meanwhile: someone else is claiming it now
      const holder = emailClaim.decode(held);
      if (now - holder.claimedAt < EMAIL_CLAIM_SETTLE_MS) return false;
      if ((await call(() => redis.exists(redisKey.account(holder.accountId)))) !== 0) return false;
      return (await script<number>("compare-and-set", [key], [held, claim])) === 1;
    },

    async accountIdByEmail(email: string): Promise<string | null> {
      const held = await call(() => redis.get(redisKey.email(email)));
      return held === null ? null : emailClaim.decode(held).accountId;
    },

    async setTier(accountId: string, tier: TierName): Promise<AccountRecord | null> {
      const raw = await script<RawAccount | null>(
        "set-tier",
        [redisKey.account(accountId)],
        [tier],
      );
      return raw ? toAccount(raw) : null;
    },

    async setDedicatedWorkers(accountId: string, url: string): Promise<AccountRecord | null> {
      const raw = await script<RawAccount | null>(
        "set-workers",
        [redisKey.account(accountId)],
        [url],
      );
      return raw ? toAccount(raw) : null;
    },

    async unbindDedicatedWorkers(accountId: string) {
      const raw = await script<RawAccount | "not_bound" | null>(
        "set-workers",
        [redisKey.account(accountId)],
        [""],
      );
      if (raw === null) return { status: "not_found" as const };
      if (raw === "not_bound") return { status: "not_bound" as const };
      return { status: "unbound" as const, account: toAccount(raw) };
    },

    async verifyEmail(accountId: string, grant: CreditChange & { amount: number }) {
      return script<"verified" | "already_verified" | "not_found">(
        "verify-email",
        [
          redisKey.account(accountId),
          redisKey.ledger(accountId),
          redisKey.operation(accountId, grant.requestId),
        ],
        [grant.amount, grant.reason, grant.requestId, options.periodMs, OPERATION_TTL_SECONDS],
      );
    },

    async setSpendAlert(
      accountId: string,
      alert: { credits: number },
    ): Promise<AccountRecord | null> {
      const raw = await script<RawAccount | null>(
        "spend-alert",
        [redisKey.account(accountId)],
        [alert.credits],
      );
      return raw ? toAccount(raw) : null;
    },

    async removeSpendAlert(accountId: string) {
      const raw = await script<RawAccount | "not_set" | null>(
        "spend-alert",
        [redisKey.account(accountId)],
        [0],
      );
      if (raw === null) return { status: "not_found" as const };
      if (raw === "not_set") return { status: "not_set" as const };
      return { status: "removed" as const, account: toAccount(raw) };
    },
  };
}
