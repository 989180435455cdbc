import { afterEach, describe, expect, it, vi } from "vitest";
import { openBooksDatabase, type BooksDatabase } from "../../src/books/database.js";
import { insertLedgerEntries } from "../../src/books/ledger-rows.js";
import { migrate } from "../../src/books/migrations.js";
import { moveLegacyRequestRecords } from "../../src/books/legacy-records.js";
import { monthStart, partitionName, splitDefaultPartitions } from "../../src/books/partitions.js";
import { insertPayments } from "../../src/books/records.js";
import { applyLedgerToRequests, upsertRequestTimings } from "../../src/books/requests.js";
import { newAccountId, newRequestId } from "../../src/lib/ids.js";
import type { LedgerEntry } from "../../src/store/types.js";
import { callTool, fundedAccount, startGateway } from "../helpers/gateway.js";
import { freshDatabase } from "../helpers/postgres.js";

/**
 * The books' tables are monthly partitions (migration 003): ledger entries by their stream id's
 * time, request records by their request id's slot. Rows land in their month's partition, ids
 * naming no slot in the default one, events and payments by their own time, a re-exported batch
 * inserts nothing twice, and rows written before the migrations end up in their months too. On PGlite and on a real PostgreSQL.
 */
const OCT = Date.UTC(2026, 9, 14, 12);
const NOV = Date.UTC(2026, 10, 22, 17);

function debitAndRefund(at: number, seq: number, requestId: string): LedgerEntry[] {
  const base = { reason: "tool call", requestId, tool: "text-stats", keyId: "key_a" };
  return [
    { ...base, id: `${at}-${seq}`, at, kind: "debit", amount: -3, balance: 97 },
    { ...base, id: `${at + 5}-0`, at: at + 5, kind: "refund", amount: 3, balance: 100 },
  ];
}

const where = (db: BooksDatabase, table: string) =>
  db.query<{ partition: string; n: string | number }>(
    `SELECT tableoid::regclass::text AS partition, count(*) AS n FROM ${table} GROUP BY 1 ORDER BY 1`,
  );
const partitionsOf = async (db: BooksDatabase, table: string) =>
  (
    await db.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = $1::regclass ORDER BY 1`,
      [table],
    )
  ).map((r) => r.name);

describe.each([
  ["PGlite", () => Promise.resolve("pglite://memory")],
  ["PostgreSQL", () => freshDatabase()],
] as const)("monthly partitions of the books on %s", (_name, database) => {
  let db: BooksDatabase | undefined;
  afterEach(async () => {
    await db?.close();
    db = undefined;
  });

  it("puts each row in its month's partition and a re-exported batch in nothing twice", async () => {
    db = await openBooksDatabase(await database());
    await migrate(db);
    const created = await splitDefaultPartitions(db, NOV);
    expect(created).toEqual([
      "ledger_entries_y2026m11",
      "ledger_entries_y2026m12",
      "request_records_y2026m11",
      "request_records_y2026m12",
      "events_y2026m11",
      "events_y2026m12",
      "payments_y2026m11",
      "payments_y2026m12",
    ]);
    // Idempotent: a second process starting finds them all.
    expect(await splitDefaultPartitions(db, NOV)).toEqual([]);

    const account = newAccountId();
    const october = newRequestId(OCT);
    const november = newRequestId(NOV);
    const batch = [
      ...debitAndRefund(OCT, 0, october),
      ...debitAndRefund(NOV, 0, november),
      ...debitAndRefund(NOV + 10, 0, "facilitator:pay_1"),
    ];
    const exportBatch = () =>
      db!.transaction(async (query) => {
        const inserted = await insertLedgerEntries(query, account, batch);
        await applyLedgerToRequests(query, account, batch);
        return inserted;
      });
    expect(await exportBatch()).toBe(6);
    // The serving process's timings, keyed by the same (account, request id, slot).
    await upsertRequestTimings(
      db.query,
      [october, november].map((requestId) => ({
        accountId: account,
        requestId,
        at: NOV,
        tool: "text-stats",
        keyId: "key_a",
        status: 502,
        outcome: "worker_unavailable",
        latencyMs: 12,
      })),
    );
    // October has no partition yet: its rows wait in the default one.
    expect(await where(db, "ledger_entries")).toEqual([
      { partition: "ledger_entries_default", n: expect.anything() },
      { partition: "ledger_entries_y2026m11", n: expect.anything() },
    ]);
    expect(await splitDefaultPartitions(db, NOV)).toEqual([
      "ledger_entries_y2026m10",
      "request_records_y2026m10",
    ]);
    expect(await partitionsOf(db, "ledger_entries")).toEqual([
      "ledger_entries_default",
      "ledger_entries_y2026m10",
      "ledger_entries_y2026m11",
      "ledger_entries_y2026m12",
    ]);

    // Re-exporting the same batch (a crash between insert and trim) inserts nothing.
    expect(await exportBatch()).toBe(0);
    const ledger = await where(db, "ledger_entries");
    expect(ledger.map((r) => [r.partition, Number(r.n)])).toEqual([
      ["ledger_entries_y2026m10", 2],
      ["ledger_entries_y2026m11", 4],
    ]);
    const records = await db.query<{
      partition: string;
      request_id: string;
      status: number | null;
      credits: string | number;
    }>(
      `SELECT tableoid::regclass::text AS partition, request_id, status, credits
         FROM request_records ORDER BY at, request_id`,
    );
    expect(records.map((r) => [r.partition, r.request_id, r.status, Number(r.credits)])).toEqual([
      ["request_records_y2026m10", october, 502, 0],
      ["request_records_y2026m11", november, 502, 0],
      ["request_records_default", "facilitator:pay_1", null, 0],
    ]);
  });

  it("moves the rows written before migrations 003 and 004 into their months", async () => {
    db = await openBooksDatabase(await database());
    // The schema as it was after migration 002, with a row in each table.
    expect(await migrate(db, { through: 2 })).toEqual([1, 2]);
    const account = newAccountId();
    const october = newRequestId(OCT);
    const batch = debitAndRefund(OCT, 7, october);
    // Records: the call above (its credits known, its timing not yet), and 2,500 older ones.
    const older = Array.from({ length: 2500 }, (_, i) => newRequestId(OCT - 86_400_000 * 40 + i));
    await db.transaction(async (query) => {
      await insertLedgerEntries(query, account, batch);
      await query(
        `INSERT INTO request_records (account_id, request_id, at, tool, key_id, charged, refunded)
         VALUES ($1, $2, $3, 'text-stats', 'key_a', 3, 3)`,
        [account, october, new Date(OCT).toISOString()],
      );
      await query(
        `INSERT INTO request_records (account_id, request_id, at, tool, key_id, status, outcome, latency_ms, charged, refunded)
         SELECT $1, id, $2, 'hash', NULL, 200, 'ok', 5, 1, 0 FROM unnest($3::text[]) AS id`,
        [account, new Date(OCT - 86_400_000 * 40).toISOString(), older],
      );
      await query(
        `INSERT INTO payments (id, account_id, network, payer, value_atomic, credits, type, plan, tx_hash, settled_at)
         VALUES ('pay_1', $1, 'base-sepolia', '0xabc', 2000, 1, 'one_time', NULL, '0xdef', $2)`,
        [account, new Date(OCT).toISOString()],
      );
    });

    // The ledger's files (table and indexes) before migration 003: it attaches them, copies nothing.
    const files = (names: string[]) =>
      Promise.all(
        names.map(async (name) => {
          const [row] = await db!.query<{ file: string | number | null }>(
            "SELECT pg_relation_filenode($1::regclass) AS file",
            [name],
          );
          return String(row!.file);
        }),
      );
    const ledgerIndexes = ["pkey", "account_at", "account_tool", "account_key"];
    const before = await files([
      "ledger_entries",
      ...ledgerIndexes.map((i) => `ledger_entries_${i}`),
    ]);
    expect(await migrate(db)).toEqual([3, 4]);
    expect(
      await files([
        "ledger_entries_default",
        ...ledgerIndexes.map((i) => `ledger_entries_default_${i}`),
      ]),
    ).toEqual(before);
    // …and each of them is the partition's part of the partitioned table's index of that name.
    const adopted = await db.query<{ index: string; parent: string }>(
      `SELECT c.relname AS index, p.relname AS parent FROM pg_inherits i
         JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
        WHERE c.relname LIKE 'ledger_entries_default_%' ORDER BY 1`,
    );
    expect(adopted).toEqual(
      [...ledgerIndexes].sort().map((i) => ({
        index: `ledger_entries_default_${i}`,
        parent: `ledger_entries_${i}`,
      })),
    );
    // The request records were set aside, not copied: moved after start-up, in batches. The
    // call's timing arrives first, in the new table; the move merges it with the old row.
    expect(await db.query("SELECT 1 FROM request_records")).toHaveLength(0);
    await upsertRequestTimings(db.query, [
      {
        accountId: account,
        requestId: october,
        at: OCT,
        tool: "text-stats",
        keyId: "key_a",
        status: 502,
        outcome: "worker_unavailable",
        latencyMs: 9,
      },
    ]);
    expect(await moveLegacyRequestRecords(db, { batch: 1000 })).toEqual({
      moved: 2501,
      done: true,
      dropped: true,
    });
    expect(await moveLegacyRequestRecords(db)).toEqual({ moved: 0, done: true, dropped: false });
    await splitDefaultPartitions(db, NOV);
    expect((await where(db, "ledger_entries")).map((r) => [r.partition, Number(r.n)])).toEqual([
      ["ledger_entries_y2026m10", 2],
    ]);
    expect((await where(db, "request_records")).map((r) => [r.partition, Number(r.n)])).toEqual([
      ["request_records_y2026m09", 2500],
      ["request_records_y2026m10", 1],
    ]);
    const [merged] = await db.query(
      "SELECT status, latency_ms, charged::int AS charged, refunded::int AS refunded FROM request_records WHERE request_id = $1",
      [october],
    );
    expect(merged).toEqual({ status: 502, latency_ms: 9, charged: 3, refunded: 3 });
    const [record] = await db.query<{ partition: string; minted_ms: string | number }>(
      `SELECT tableoid::regclass::text AS partition,
              (extract(epoch FROM minted_at) * 1000)::bigint AS minted_ms FROM request_records WHERE request_id = $1`,
      [october],
    );
    // The slot computed in SQL by the migration is the one the writers compute.
    expect(record).toEqual({ partition: "request_records_y2026m10", minted_ms: expect.anything() });
    expect(Number(record!.minted_ms)).toBe(Math.floor(OCT / 30_000) * 30_000);
    // The writers find the migrated row by its key: the refund sets it again, nothing is added.
    await db.transaction((query) => applyLedgerToRequests(query, account, batch));
    expect(await db.query("SELECT 1 FROM request_records")).toHaveLength(2501);
    // The payment is in its month, and its id is known: written again (a later writer, another
    // clock), it is not added twice.
    expect(await where(db, "payments")).toEqual([
      { partition: "payments_y2026m10", n: expect.anything() },
    ]);
    const again = {
      id: "pay_1",
      accountId: account,
      network: "base-sepolia",
      payer: "0xabc",
      valueAtomic: "2000",
      credits: 1,
      type: "one_time",
      plan: null,
      txHash: "0xdef",
      settledAt: NOV,
    };
    expect(await db.transaction((query) => insertPayments(query, [again]))).toBe(0);
    expect(await db.query("SELECT id FROM payments")).toEqual([{ id: "pay_1" }]);
  });
});

it("a gateway makes this and next month's partitions at start-up, and its calls' rows land in this month's", async () => {
  const url = await freshDatabase();
  const gw = await startGateway({
    store: "redis",
    env: { DATABASE_URL: url, BOOKS_EXPORT_INTERVAL_MS: "100" },
  });
  const db = await openBooksDatabase(url);
  try {
    const { accountId, key } = await fundedAccount(gw.url, 100, "business");
    expect((await callTool(gw.url, key, "hash", { text: "a" })).status).toBe(200);
    const now = Date.now();
    const rows = () =>
      db.query<{ partition: string }>(
        `SELECT tableoid::regclass::text AS partition FROM ledger_entries WHERE account_id = $1
         UNION ALL
         SELECT tableoid::regclass::text FROM request_records WHERE account_id = $1 AND status = 200`,
        [accountId],
      );
    // Sign-up grant, admin grant, the call's debit, and the call's request record.
    // (PostgreSQL is opened in the background: the export begins once it is open and split.)
    await vi.waitFor(async () => expect(await rows()).toHaveLength(4), { timeout: 10_000 });
    expect(await partitionsOf(db, "request_records")).toEqual([
      "request_records_default",
      partitionName("request_records", monthStart(now)),
      partitionName("request_records", monthStart(now, 1)),
    ]);
    expect(new Set((await rows()).map((r) => r.partition))).toEqual(
      new Set([
        partitionName("ledger_entries", monthStart(now)),
        partitionName("request_records", monthStart(now)),
      ]),
    );
  } finally {
    await db.close();
    await gw.stop();
  }
});

it("a gateway started on books from before partitioning moves their request records into their months while it serves", async () => {
  const url = await freshDatabase();
  const old = await openBooksDatabase(url);
  const account = newAccountId();
  const ids = Array.from({ length: 30 }, (_, i) => newRequestId(OCT + i * 1000));
  try {
    await migrate(old, { through: 2 });
    await old.query(
      `INSERT INTO request_records (account_id, request_id, at, tool, key_id, status, outcome, latency_ms, charged, refunded)
       SELECT $1, id, $2, 'hash', NULL, 200, 'ok', 5, 1, 0 FROM unnest($3::text[]) AS id`,
      [account, new Date(OCT).toISOString(), ids],
    );
  } finally {
    await old.close();
  }
  const gw = await startGateway({
    store: "redis",
    env: { DATABASE_URL: url, BOOKS_EXPORT_INTERVAL_MS: "100" },
  });
  const db = await openBooksDatabase(url);
  try {
    const { key } = await fundedAccount(gw.url, 100, "business");
    expect((await callTool(gw.url, key, "hash", { text: "a" })).status).toBe(200);
    await vi.waitFor(
      async () =>
        expect(
          await db.query("SELECT to_regclass('request_records_unpartitioned')::text AS old"),
        ).toEqual([{ old: null }]),
      { timeout: 20_000 },
    );
    await vi.waitFor(
      async () =>
        expect(
          (await where(db, "request_records")).filter((r) => r.partition.endsWith("y2026m10")),
        ).toEqual([{ partition: "request_records_y2026m10", n: expect.anything() }]),
      { timeout: 10_000 },
    );
    const [moved] = await db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM request_records WHERE account_id = $1",
      [account],
    );
    expect(moved!.n).toBe(30);
  } finally {
    await db.close();
    await gw.stop();
  }
});
