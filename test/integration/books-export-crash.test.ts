import { afterAll, beforeAll, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { checkBooks } from "../../src/books/check.js";
import { openBooksDatabase, type BooksDatabase } from "../../src/books/database.js";
import { exportPass } from "../../src/books/exporter.js";
import { migrate } from "../../src/books/migrations.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis.js";
import { tierLimits } from "../../src/store/index.js";
import { PERIOD_MS } from "../../src/accounts/tiers.js";
import { loadWorkerConfig } from "../../src/workers/config.js";
import { startWorkers } from "../../src/workers/main.js";
import {
  balanceOf,
  callTool,
  dropPrefix,
  fundedAccount,
  signUp,
  spawnGateway,
  uniquePrefix,
  type GatewayProcess,
} from "../helpers/gateway.js";
import { freshDatabase, sql } from "../helpers/postgres.js";
import { REDIS_URL } from "../helpers/redis.js";

/**
 * Exactly once across crashes: one gateway process serves calls (exporting nothing), another
 * exports them to PostgreSQL in small batches and is SIGKILLed twice in the middle of its work,
 * under load (calls, and sign-ups, each an account event); the test's own exporter finishes. The
 * books then hold every entry once, every event once, each call's request record once, and each account's entries sum to its balance — checked here and by `npm run books:check`, a real child process.
 */
const prefix = uniquePrefix("books-crash");
let database: string;
let db: BooksDatabase;
let store: RedisStore;
let workers: Awaited<ReturnType<typeof startWorkers>>;
let serving: GatewayProcess;
const exporters: GatewayProcess[] = [];

beforeAll(async () => {
  database = await freshDatabase();
  workers = await startWorkers(loadWorkerConfig({ PORT: "0", LOG_LEVEL: "silent" }));
  serving = await spawnGateway(prefix, {
    DATABASE_URL: database,
    BOOKS_EXPORT: "0",
    WORKERS_URL: `http://127.0.0.1:${workers.port}`,
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
});
afterAll(async () => {
  await Promise.all([serving?.stop(), ...exporters.map((e) => e.stop("SIGKILL"))]);
  await workers?.stop();
  await store?.close();
  await db?.close();
  await dropPrefix(prefix);
});

const exporter = () =>
  spawnGateway(prefix, {
    DATABASE_URL: database,
    WORKERS_URL: `http://127.0.0.1:${workers.port}`,
    BOOKS_EXPORT_BATCH: "7",
    BOOKS_EXPORT_INTERVAL_MS: "20",
    BOOKS_EXPORT_LEASE_MS: "1500",
    BOOKS_EXPORT_SHARDS: "2",
  }).then((p) => {
    exporters.push(p);
    return p;
  });
const exportedCount = async () =>
  Number((await sql<{ n: string }>(database, "SELECT count(*) AS n FROM ledger_entries"))[0]!.n);
async function until(what: string, ok: () => Promise<boolean>, ms = 60_000): Promise<void> {
  for (
    const deadline = Date.now() + ms;
    !(await ok());
    await new Promise((r) => setTimeout(r, 20))
  ) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen in ${ms} ms`);
  }
}

it("exports every entry and every event exactly once although the exporting process is SIGKILLed mid-export, twice, under load", async () => {
  const accounts = await Promise.all(
    Array.from({ length: 4 }, () => fundedAccount(serving.url, 5000, "business")),
  );
  let load = true;
  const ok = new Map(accounts.map((a) => [a.accountId, 0]));
  const failures: number[] = [];
  const clients = accounts.map(async (account) => {
    for (let i = 0; load && i < 800; i++) {
      const res = await callTool(serving.url, account.key, "hash", { text: `${i}` });
      if (res.status === 200) ok.set(account.accountId, ok.get(account.accountId)! + 1);
      else failures.push(res.status);
    }
  });
  // Events under load too: each sign-up is an account with its grant and its agent.registered.
  const signedUp: string[] = [];
  clients.push(
    (async () => {
      while (load && signedUp.length < 200) {
        signedUp.push((await signUp(serving.url)).accountId);
        await new Promise((r) => setTimeout(r, 10));
      }
    })(),
  );
  try {
    await new Promise((r) => setTimeout(r, 1500)); // a backlog to export
    const overlaps: number[] = [];
    for (let crash = 1; crash <= 2; crash++) {
      const victim = await exporter();
      const before = await exportedCount();
      // Killed in the middle of its work: it has inserted batches, and more are waiting.
      await until(
        "the exporter's first batches",
        async () => (await exportedCount()) >= before + 14,
      );
      victim.child.kill("SIGKILL");
      await victim.stop("SIGKILL");
      // Entries in both places were inserted but not yet trimmed when the process died.
      overlaps.push(await inBothPlaces(accounts.map((a) => a.accountId)));
    }
    process.stdout.write(
      `books export crash test: entries inserted but not yet trimmed at each SIGKILL: ${overlaps.join(", ")}\n`,
    );
  } finally {
    load = false;
    await Promise.all(clients);
  }
  expect(failures).toEqual([]);
  // The rest is exported by this process's own exporter, once the dead one's lease has run out.
  const expected =
    [...ok.values()].reduce((n, v) => n + v, 0) + 2 * accounts.length + signedUp.length;
  const everyAccount = [...accounts.map((a) => a.accountId), ...signedUp];
  await until("the export to catch up", async () => {
    await exportPass(store, db, { batchSize: 500, leaseMs: 1500, shards: 2 }, () => undefined);
    // Every account's agent.registered has been handed on by a relay (logged), and exported.
    const relayed = await sql<{ n: number }>(
      database,
      "SELECT count(*)::int AS n FROM events WHERE type = 'agent.registered'",
    );
    return (
      relayed[0]!.n >= everyAccount.length &&
      (await store.ledgerBacklog({ limit: 1000 })).items.length === 0
    );
  });
  expect(await exportedCount()).toBe(expected);
  // Each account's sign-up event, once (and no other event: no call ran an account low).
  const events = await sql<{ account_id: string; type: string; n: number }>(
    database,
    "SELECT account_id, type, count(*)::int AS n FROM events GROUP BY 1, 2 ORDER BY 1",
  );
  expect(events).toEqual(
    everyAccount.sort().map((account_id) => ({ account_id, type: "agent.registered", n: 1 })),
  );
  process.stdout.write(
    `books export crash test: ${expected} ledger entries and ${events.length} events exported once (${signedUp.length} sign-ups under load)
`,
  );

  for (const account of accounts) {
    const [row] = await sql<{ n: number; requests: number; sum: number }>(
      database,
      "SELECT count(*)::int AS n, count(DISTINCT request_id)::int AS requests, sum(amount)::int AS sum FROM ledger_entries WHERE account_id = $1",
      [account.accountId],
    );
    const balance = await balanceOf(serving.url, account.key);
    expect(balance).toBe(5000 - ok.get(account.accountId)!);
    expect(row).toEqual({
      n: 2 + ok.get(account.accountId)!,
      requests: 2 + ok.get(account.accountId)!,
      sum: balance,
    });
  }
  // Each call's request record, once: its credits from the debit exported exactly once with the
  // ledger, its status and latency from the serving process (which never crashed).
  for (const account of accounts) {
    const calls = ok.get(account.accountId)!;
    await until("the serving process's request timings", async () => {
      const [row] = await sql<{ timed: number }>(
        database,
        "SELECT count(*)::int AS timed FROM request_records WHERE account_id = $1 AND status = 200 AND latency_ms IS NOT NULL",
        [account.accountId],
      );
      return row!.timed === calls;
    });
    const [records] = await sql<{ n: number; requests: number; credits: number }>(
      database,
      "SELECT count(*)::int AS n, count(DISTINCT request_id)::int AS requests, sum(credits)::int AS credits FROM request_records WHERE account_id = $1 AND tool = 'hash'",
      [account.accountId],
    );
    expect(records).toEqual({ n: calls, requests: calls, credits: calls });
  }
  expect((await checkBooks(store, db)).mismatches).toEqual([]);
  const check = spawnSync(process.execPath, ["scripts/books-check.mjs"], {
    cwd: new URL("../..", import.meta.url).pathname,
    env: { PATH: process.env.PATH, REDIS_URL, REDIS_KEY_PREFIX: prefix, DATABASE_URL: database },
    encoding: "utf8",
  });
  expect([check.status, check.stdout.trim()]).toEqual([
    0,
    `books:check: ${everyAccount.length} accounts, ${expected} ledger entries, 0 mismatches\n` +
      `books:check: ${everyAccount.length} events, 0 held more than once`,
  ]);
}, 240_000);

/** How many entries are both in the books and still in the store. */
async function inBothPlaces(accountIds: string[]): Promise<number> {
  let both = 0;
  for (const accountId of accountIds) {
    const held = (await store.oldestLedger(accountId, 100)).map((e) => e.id);
    const [row] = await sql<{ n: number }>(
      database,
      "SELECT count(*)::int AS n FROM ledger_entries WHERE account_id = $1 AND (entry_ms || '-' || entry_seq) = ANY($2::text[])",
      [accountId, held],
    );
    both += row!.n;
  }
  return both;
}
