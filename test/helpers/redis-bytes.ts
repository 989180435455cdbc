import { Redis } from "ioredis";
import { callTool, fundedAccount, startGateway } from "./gateway.js";
import { uniquePrefix } from "./redis.js";
import { startPrivateRedis } from "./redis-server.js";

/**
 * What keyed calls leave in Redis, measured on a Redis of its own (an empty database, so every
 * byte is the gateway's): the accounts are made and warmed up, the books exported, then `calls`
 * calls of the tool "hash" are made and exported again. Retained bytes per call are the change in
 * the summed MEMORY USAGE of every key (also shown per kind of key: "debits", "rl", "ledger"…)
 * and, for comparison, in INFO memory's used_memory, over the calls. Shared by
 * test/integration/books-redis-memory.test.ts and the bench.
 */
export interface RetainedBytes {
  calls: number;
  /** Σ MEMORY USAGE over every key, after minus before, per call. */
  perCall: number;
  byKind: Record<string, number>;
  /** INFO memory used_memory less client buffers, after minus before, per call (allocator included). */
  usedMemoryPerCall: number;
}

/** Calls a minute one account may make (Business); the calls are spread over enough accounts. */
const PER_ACCOUNT = 500;

export async function measureRetainedBytes(options: {
  calls: number;
  /** A PostgreSQL database for the books, or "none" (the ledger stays in Redis). */
  databaseUrl: string;
}): Promise<RetainedBytes> {
  const redis = await startPrivateRedis({ durable: false });
  const client = new Redis(redis.url);
  const prefix = uniquePrefix("bytes");
  const gw = await startGateway({
    prefix,
    env: {
      REDIS_URL: redis.url,
      DATABASE_URL: options.databaseUrl,
      BOOKS_EXPORT_INTERVAL_MS: "100",
      // No status probes writing their history while we measure.
      STATUS_CHECK_INTERVAL_MS: "3600000",
    },
  });
  try {
    const accounts = await Promise.all(
      Array.from({ length: Math.ceil(options.calls / PER_ACCOUNT) }, () =>
        fundedAccount(gw.url, PER_ACCOUNT + 10, "business"),
      ),
    );
    for (const { key } of accounts) await callTool(gw.url, key, "hash", { text: "warm-up" });
    const caughtUp = async () => {
      const books = gw.services.books;
      if (!books) return;
      // A pass of our own skips the shards a background pass holds (and returns at once), so
      // the wait is bounded by time, not by passes: the other pass needs its time to finish.
      for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
        if ((await gw.services.store.ledgerBacklog({ limit: 1000 })).items.length === 0) return;
        await books.exportNow();
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error("the books export did not catch up in 30 s");
    };
    await caughtUp();
    const before = await keyBytes(client, prefix);
    const usedBefore = await usedMemory(client);
    let made = 0;
    for (const { key } of accounts) {
      for (let i = 0; i < PER_ACCOUNT && made < options.calls; i += 10) {
        const batch = Math.min(10, options.calls - made);
        const statuses = await Promise.all(
          Array.from({ length: batch }, (_, j) =>
            callTool(gw.url, key, "hash", { text: `${i + j}` }).then((r) => r.status),
          ),
        );
        if (statuses.some((s) => s !== 200))
          throw new Error(`calls answered ${statuses.join(",")}`);
        made += batch;
      }
    }
    await caughtUp();
    const after = await keyBytes(client, prefix);
    const usedAfter = await usedMemory(client);
    const kinds = [...new Set([...Object.keys(before), ...Object.keys(after)])];
    return {
      calls: made,
      perCall: (total(after) - total(before)) / made,
      byKind: Object.fromEntries(
        kinds
          .map((kind) => [kind, ((after[kind] ?? 0) - (before[kind] ?? 0)) / made] as const)
          .filter(([, bytes]) => bytes !== 0)
          .map(([kind, bytes]) => [kind, Math.round(bytes * 10) / 10]),
      ),
      usedMemoryPerCall: (usedAfter - usedBefore) / made,
    };
  } finally {
    client.disconnect();
    await gw.stop();
    await redis.stop();
  }
}

/** MEMORY USAGE of every key in the database, summed by kind: the part after the hash tag (`{acct_…}:debits:…` → "debits"), else after the prefix. */
async function keyBytes(redis: Redis, prefix: string): Promise<Record<string, number>> {
  const bytes: Record<string, number> = {};
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "COUNT", 1000);
    cursor = next;
    for (const key of keys) {
      const tagged = /\}:([^:]+)/.exec(key);
      const kind = tagged ? tagged[1]! : (key.slice(prefix.length).split(":")[0] ?? key);
      bytes[kind] = (bytes[kind] ?? 0) + ((await redis.memory("USAGE", key, "SAMPLES", "0")) ?? 0);
    }
  } while (cursor !== "0");
  return bytes;
}

/** INFO memory's used_memory less the clients' buffers (which the gateway's connections move by tens of kilobytes either way). */
async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info("memory");
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, "m").exec(info)?.[1] ?? 0);
  return field("used_memory") - field("mem_clients_normal");
}

const total = (bytes: Record<string, number>) => Object.values(bytes).reduce((n, b) => n + b, 0);
