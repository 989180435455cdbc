import { afterAll, beforeAll, expect, it } from "vitest";
import { PERIOD_MS } from "../../src/accounts/tiers.js";
import { accountAnalytics } from "../../src/books/analytics.js";
import { openBooksDatabase, type BooksDatabase } from "../../src/books/database.js";
import { exportPass } from "../../src/books/exporter.js";
import { migrate } from "../../src/books/migrations.js";
import { tierLimits } from "../../src/store/index.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis.js";
import {
  callTool,
  dropPrefix,
  fundedAccount,
  spawnGateway,
  uniquePrefix,
  type GatewayProcess,
} from "../helpers/gateway.js";
import { freshDatabase } from "../helpers/postgres.js";
import { REDIS_URL } from "../helpers/redis.js";

/**
 * A serving process SIGKILLed before it wrote its calls' timings loses only those timings: each
 * call's request record is still in the books once, from its ledger entries — time, tool, key,
 * credits — and analytics count a refunded call without a status as an error (status "unknown").
 */
const prefix = uniquePrefix("records-crash");
let database: string;
let db: BooksDatabase;
let store: RedisStore;
let serving: GatewayProcess;

beforeAll(async () => {
  database = await freshDatabase();
  // It never writes to the books: no export, and its timings wait for a flush a minute away.
  serving = await spawnGateway(prefix, {
    DATABASE_URL: database,
    BOOKS_EXPORT: "0",
    BOOKS_EXPORT_INTERVAL_MS: "60000",
  });
  store = createRedisStore({
    url: REDIS_URL,
    keyPrefix: prefix,
    tiers: tierLimits(),
    periodMs: PERIOD_MS,
  });
  db = await openBooksDatabase(database);
  // The gateway migrates the books in the background once it is ready, so a process killed soon
  // after may not have: this test exports in its place, on the schema (migrating twice is a no-op).
  await migrate(db);
}, 60_000);
afterAll(async () => {
  await serving?.stop("SIGKILL");
  await store?.close();
  await db?.close();
  await dropPrefix(prefix);
});

it("keeps every call's request record and credits when the serving process dies before writing their timings", async () => {
  const { accountId, keyId, key } = await fundedAccount(serving.url, 100, "pro");
  const from = Date.now() - 1000;
  for (let i = 0; i < 4; i++)
    expect((await callTool(serving.url, key, "hash", { text: `${i}` })).status).toBe(200);
  expect((await callTool(serving.url, key, "regex-test", { pattern: "(", text: "x" })).status).toBe(
    422,
  );
  await serving.stop("SIGKILL");

  for (let pass = 0; pass < 20; pass++) {
    await exportPass(store, db, { batchSize: 3, leaseMs: 1500, shards: 1 }, () => undefined);
    if ((await store.ledgerBacklog({ limit: 10 })).items.length === 0) break;
  }
  const rows = await db.query<{
    tool: string;
    key_id: string;
    status: number | null;
    latency_ms: number | null;
    credits: string | number;
  }>(
    "SELECT tool, key_id, status, latency_ms, credits FROM request_records WHERE account_id = $1 ORDER BY tool",
    [accountId],
  );
  expect(rows.map((r) => ({ ...r, credits: Number(r.credits) }))).toEqual([
    ...Array(4).fill({ tool: "hash", key_id: keyId, status: null, latency_ms: null, credits: 1 }),
    { tool: "regex-test", key_id: keyId, status: null, latency_ms: null, credits: 0 },
  ]);
  const answer = await accountAnalytics(db, accountId, {
    from,
    to: Date.now() + 1000,
    granularity: "day",
    groupBy: "status",
  });
  expect(answer.totals).toEqual({
    calls: 5,
    credits: 4,
    errors: 1,
    latencyP50Ms: null,
    latencyP95Ms: null,
  });
  expect(answer.buckets.map((b) => [b.group, b.calls, b.errors])).toEqual([["unknown", 5, 1]]);
}, 60_000);
