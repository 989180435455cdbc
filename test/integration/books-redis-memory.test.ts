import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { callTool, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";
import { freshDatabase } from "../helpers/postgres.js";
import { REDIS_URL } from "../helpers/redis.js";

/**
 * What a keyed call leaves in Redis, measured with MEMORY USAGE over the account's keys before
 * and after N calls (the shared Redis's INFO memory would count other tests' keys too): without
 * the books (the ledger stream keeps every entry) and with them, once the exporter caught up
 * (the stream is trimmed; what stays is the debit records, kept 24 h, and the rate-limit window,
 * 60 s). Printed, per key kind, and held to "the books leave less".
 */
const CALLS = 200;
let plain: TestGateway;
let books: TestGateway;
let redis: Redis;
beforeAll(async () => {
  [plain, books] = await Promise.all([
    startGateway(),
    freshDatabase().then((url) =>
      startGateway({ env: { DATABASE_URL: url, BOOKS_EXPORT_INTERVAL_MS: "100" } }),
    ),
  ]);
  redis = new Redis(REDIS_URL);
});
afterAll(async () => {
  redis?.disconnect();
  await Promise.all([plain?.stop(), books?.stop()]);
});

/** Bytes held by the account's keys, by kind (ledger, op, rl, …). */
async function accountBytes(prefix: string, accountId: string): Promise<Record<string, number>> {
  const bytes: Record<string, number> = {};
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(
      cursor,
      "MATCH",
      `${prefix}{${accountId}}:*`,
      "COUNT",
      1000,
    );
    cursor = next;
    for (const key of keys) {
      const kind = key.slice(`${prefix}{${accountId}}:`.length).split(":")[0]!;
      bytes[kind] = (bytes[kind] ?? 0) + ((await redis.memory("USAGE", key, "SAMPLES", "0")) ?? 0);
    }
  } while (cursor !== "0");
  return bytes;
}
const total = (bytes: Record<string, number>) => Object.values(bytes).reduce((n, b) => n + b, 0);

async function perCall(
  gw: TestGateway,
): Promise<{ perCall: number; byKind: Record<string, number> }> {
  const { key, accountId } = await fundedAccount(gw.url, CALLS + 10, "business");
  expect((await callTool(gw.url, key, "hash", { text: "warm-up" })).status).toBe(200);
  const caughtUp = async () => {
    if (!gw.services.books) return;
    for (
      let i = 0;
      i < 100 && (await gw.services.store.ledgerBacklog({ limit: 1000 })).items.length > 0;
      i++
    )
      await gw.services.books.exportNow();
  };
  await caughtUp();
  const before = await accountBytes(gw.prefix, accountId);
  for (let i = 0; i < CALLS; i += 10) {
    const statuses = await Promise.all(
      Array.from({ length: 10 }, (_, j) =>
        callTool(gw.url, key, "hash", { text: `${i + j}` }).then((r) => r.status),
      ),
    );
    expect(statuses).toEqual(Array(10).fill(200));
  }
  await caughtUp();
  const after = await accountBytes(gw.prefix, accountId);
  const byKind = Object.fromEntries(
    [...new Set([...Object.keys(before), ...Object.keys(after)])].map((kind) => [
      kind,
      Math.round(((after[kind] ?? 0) - (before[kind] ?? 0)) / CALLS),
    ]),
  );
  return { perCall: (total(after) - total(before)) / CALLS, byKind };
}

it("prints the Redis bytes a keyed call leaves, with and without the books", async () => {
  const without = await perCall(plain);
  const withBooks = await perCall(books);
  process.stdout.write(
    `Redis bytes retained per keyed call (${CALLS} calls, MEMORY USAGE of the account's keys):\n` +
      `  books in Redis (DATABASE_URL=none): ${without.perCall.toFixed(0)} B/call ${JSON.stringify(without.byKind)}\n` +
      `  books exported to PostgreSQL:        ${withBooks.perCall.toFixed(0)} B/call ${JSON.stringify(withBooks.byKind)}\n` +
      `  of which the debit records (kept 24 h) are "op", the rate-limit window (60 s) "rl"\n`,
  );
  expect(withBooks.byKind.ledger ?? 0).toBeLessThanOrEqual(0);
  expect(withBooks.perCall).toBeLessThan(without.perCall);
}, 120_000);
