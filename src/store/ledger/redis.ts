/**
 * Each account's ledger on Redis: a stream (`{acct}:ledger`) the credit scripts append to; entry
 * ids are the stream's ids, so paging and trimming are range commands.
 */
import { connectRedis } from "../redis-connection.js";
import { type RedisContext, redisKey } from "../redis-context.js";
import {
  InvalidCursorError,
  checkLedgerCursor,
  type LedgerBacklog,
  type LedgerEntry,
  type LedgerFollower,
  type LedgerKind,
  type Page,
} from "../types.js";
import type { LedgerStore } from "./index.js";

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

export function redisLedger({ redis, call, options }: RedisContext): LedgerStore {
  return {
    async ledger(
      accountId: string,
      page: { cursor?: string; limit: number },
    ): Promise<Page<LedgerEntry>> {
      // Newest first; the cursor is the last stream id seen, excluded with "(".
      checkLedgerCursor(page.cursor);
      const end = page.cursor !== undefined ? `(${page.cursor}` : "+";
      const rows = await call(() =>
        redis.xrevrange(redisKey.ledger(accountId), end, "-", "COUNT", page.limit + 1),
      ).catch((err: Error) => {
        // Well-formed but out of range (past 2^64-1, or "(0-0"): Redis refuses it.
        if (/Invalid stream ID|invalid start ID/i.test(err.message))
          throw new InvalidCursorError(err.message);
        throw err;
      });
      const items = rows.slice(0, page.limit).map(ledgerEntryFrom);
      return { items, nextCursor: rows.length > page.limit ? (items.at(-1)?.id ?? null) : null };
    },

    async oldestLedger(accountId: string, limit: number): Promise<LedgerEntry[]> {
      return (
        await call(() => redis.xrange(redisKey.ledger(accountId), "-", "+", "COUNT", limit))
      ).map(ledgerEntryFrom);
    },

    async trimLedger(accountId: string, throughId: string): Promise<void> {
      // MINID keeps ids >= the threshold: the one just after `throughId`. The stream key stays
      // (empty), so its last id, and the ids after it, keep rising.
      const [ms, seq] = throughId.split("-").map(BigInt) as [bigint, bigint];
      await call(() => redis.xtrim(redisKey.ledger(accountId), "MINID", `${ms}-${seq + 1n}`));
    },

    async ledgerBacklog(page: { cursor?: string; limit: number }): Promise<Page<LedgerBacklog>> {
      // The cursor is a rank in the account list (creation order): accounts are only ever appended.
      const start = page.cursor ? Number(page.cursor) : 0;
      const accounts = await call(() =>
        redis.zrange(redisKey.accounts(), String(start), String(start + page.limit - 1)),
      );
      // Each account's oldest entry and oldest logged event, one command each per account (each
      // account in its own slot), all in flight at once.
      const [oldest, oldestEvents] = await call(() =>
        Promise.all([
          Promise.all(
            accounts.map((id) => redis.xrange(redisKey.ledger(id), "-", "+", "COUNT", 1)),
          ),
          Promise.all(
            accounts.map((id) => redis.zrange(redisKey.events(id), "0", "0", "WITHSCORES")),
          ),
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
    },

    followLedger(accountId: string): LedgerFollower {
      // A blocking read holds its connection, so each follower gets its own, given up on close.
      const connection = connectRedis(options.url, options.cluster ?? false, {
        keyPrefix: options.keyPrefix,
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
            redisKey.ledger(accountId),
            afterId,
          );
          return reply?.[0]?.[1].map(ledgerEntryFrom) ?? [];
        },
        async close() {
          connection.disconnect();
        },
      };
    },
  };
}
