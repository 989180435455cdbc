/**
 * API keys on Redis: each key's record (`{acct}:key:<hash>`, what the admission script reads) and
 * the account's listing (`{acct}:keys`, one JSON copy per key id) change together; the
 * admission keeps each key's last use on its record and budgeted keys' spend in `{acct}:key-spend`.
 */
import { type RedisContext, redisKey } from "../redis-context.js";
import { budgetSpent } from "./redis-key-spend.js";
import {
  type KeyRecord,
  type KeyUpdate,
  type RevokeOutcome,
  type UpdateKeyOutcome,
  withControls,
} from "../types.js";
import type { KeyStore } from "./index.js";
import { REVOKED_KEYS_KEPT } from "./revoked-kept.js";

/**
 * The key record's control fields, as the admission script reads them (`tools` as ",a,b," so a
 * lookup is one plain find; 0 or "" = none). key-update.lua writes the same fields the same way.
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

export function redisKeys({ redis, call, script, windows }: RedisContext): KeyStore {
  /** A key's spend in its budget's current window (0 without a budget). */
  function spentInWindow(key: KeyRecord, spend: Record<string, string>, now: number): number {
    return key.budget ? budgetSpent(spend, key.id, key.budget.period, now, windows) : 0;
  }

  const keys: KeyStore = {
    async addKey(key: KeyRecord, cap?: number): Promise<boolean> {
      // One script: the account's live keys are counted where the key is added (key-add.lua),
      // and the listing's copy and the record the admission reads are written together.
      const record = {
        id: key.id,
        revoked_at: String(key.revokedAt ?? 0),
        ...keyControlFields(key),
      };
      return (
        (await script<number>(
          "key-add",
          [redisKey.keyList(key.accountId), redisKey.keyRecord(key.accountId, key.hash)],
          [key.id, JSON.stringify(storedKey(key)), cap ?? "", ...Object.entries(record).flat()],
        )) === 1
      );
    },

    async listKeys(accountId: string): Promise<KeyRecord[]> {
      const all = (await call(() => redis.hvals(redisKey.keyList(accountId)))).map(
        (raw) => JSON.parse(raw) as KeyRecord,
      );
      // The admission script keeps `last_used_at` on each key's own record (the one it reads),
      // and each budgeted key's spend in the account's key-spend hash.
      const [lastUsed, spend] = await call(() =>
        Promise.all([
          Promise.all(
            all.map((key) => redis.hget(redisKey.keyRecord(accountId, key.hash), "last_used_at")),
          ),
          redis.hgetall(redisKey.keySpend(accountId)),
        ]),
      );
      const now = Date.now();
      return all
        .map((key, i) => ({
          ...withControls(key),
          lastUsedAt: lastUsed[i] ? Number(lastUsed[i]) : null,
          budgetSpent: spentInWindow(key, spend, now),
        }))
        .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
    },

    async updateKey(
      accountId: string,
      keyId: string,
      update: KeyUpdate,
      options: { keepOneActive?: boolean } = {},
    ): Promise<UpdateKeyOutcome> {
      // The hash names the record; it never changes, so reading it first races with nothing.
      const raw = await call(() => redis.hget(redisKey.keyList(accountId), keyId));
      if (!raw) return { status: "not_found" };
      const { hash } = JSON.parse(raw) as KeyRecord;
      const changes = Object.fromEntries(
        Object.entries(update).filter(([, value]) => value !== undefined),
      );
      // One script: the listing's copy and the record the admission reads change together, the
      // record's controls computed from the copy as the script changed it (key-update.lua), which
      // also keeps the account's last active key (isLastActiveKey) when asked.
      const outcome = await script<UpdateKeyOutcome>(
        "key-update",
        [
          redisKey.keyList(accountId),
          redisKey.keyRecord(accountId, hash),
          redisKey.keySpend(accountId),
        ],
        [
          keyId,
          JSON.stringify(changes),
          options.keepOneActive ? 1 : 0,
          windows.dayMs,
          windows.monthMs,
        ],
      );
      if (outcome.status === "last_active_key")
        return { status: "last_active_key", key: withControls(outcome.key) };
      const key = (await keys.listKeys(accountId)).find((k) => k.id === keyId);
      return key ? { status: "updated", key } : { status: "not_found" };
    },

    async getKey(accountId: string, keyId: string): Promise<KeyRecord | null> {
      const raw = await call(() => redis.hget(redisKey.keyList(accountId), keyId));
      return raw ? withControls(JSON.parse(raw) as KeyRecord) : null;
    },

    async revokeKey(
      accountId: string,
      keyId: string,
      graceMs: number,
      options: { keepOneActive?: boolean; replacedBy?: string } = {},
    ): Promise<RevokeOutcome> {
      const raw = await call(() => redis.hget(redisKey.keyList(accountId), keyId));
      if (!raw) return { status: "not_found" };
      const { hash } = JSON.parse(raw) as KeyRecord;
      // The script also forgets the account's revoked keys beyond the most recent (revoked-kept.ts).
      const outcome = await script<RevokeOutcome>(
        "revoke-key",
        [
          redisKey.keyList(accountId),
          redisKey.keyRecord(accountId, hash),
          redisKey.keySpend(accountId),
        ],
        [
          keyId,
          graceMs,
          options.keepOneActive ? 1 : 0,
          options.replacedBy ?? "",
          REVOKED_KEYS_KEPT,
        ],
      );
      if (outcome.status !== "not_found") outcome.key.lastUsedAt ??= null;
      return outcome;
    },
  };
  return keys;
}
