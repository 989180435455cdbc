import { Writable } from "node:stream";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { PERIOD_MS } from "../../src/accounts/tiers.js";
import { startBooks, type Books } from "../../src/books/index.js";
import { monthStart, partitionName } from "../../src/books/partitions.js";
import { eventRecord } from "../../src/events/types.js";
import { Metrics } from "../../src/http/metrics.js";
import { newAccountId, newEventId, newRequestId } from "../../src/lib/ids.js";
import { tierLimits } from "../../src/store/index.js";
import { createMemoryStore } from "../../src/store/memory.js";
import { freshDatabase } from "../helpers/postgres.js";

/**
 * The books cross a month (and a year) boundary while running: the books of a gateway (its store,
 * its export loop every 20 ms) run on a clock the test moves from 31 December 23:59 to
 * 1 January. Rows of January land in January's partitions, which were made ahead (at start-up,
 * in December) — none in a default partition, none lost, none twice, no export error — and once
 * the month has turned, February's partitions are made ahead in turn. On PGlite and PostgreSQL.
 */
const DEC_31 = Date.UTC(2026, 11, 31, 23, 59, 0);
const JAN_1 = Date.UTC(2027, 0, 1, 0, 0, 30);
const TABLES = ["ledger_entries", "request_records", "events", "payments"] as const;

describe.each([
  ["PGlite", () => Promise.resolve("pglite://memory")],
  ["PostgreSQL", () => freshDatabase()],
] as const)("a month boundary while the books run, on %s", (_name, database) => {
  let books: Books | undefined;
  afterEach(async () => {
    await books?.stop();
    books = undefined;
  });

  it("puts the new month's rows in partitions made ahead, and makes the next month's", async () => {
    let clock = DEC_31;
    const store = createMemoryStore({ tiers: tierLimits(), periodMs: PERIOD_MS, now: () => clock });
    const warnings: string[] = [];
    const log = pino(
      { level: "warn" },
      new Writable({
        write(chunk, _encoding, done) {
          warnings.push(String(chunk));
          done();
        },
      }),
    );
    books = await startBooks(
      { store, log, metrics: new Metrics(), now: () => clock },
      {
        url: await database(),
        exportEnabled: true,
        intervalMs: 20,
        batchSize: 3,
        leaseMs: 5000,
        shards: 2,
        degradedAfterMs: 60_000,
      },
    );
    const db = await books.ready(30_000);
    const partitions = async (table: string) =>
      (
        await db.query<{ name: string }>(
          `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = $1::regclass ORDER BY 1`,
          [table],
        )
      ).map((r) => r.name);
    const months =
      (...ms: number[]) =>
      (table: string) => [`${table}_default`, ...ms.map((m) => partitionName(table, m))];
    for (const table of TABLES)
      expect(await partitions(table)).toEqual(months(DEC_31, JAN_1)(table));

    // The same activity each side of midnight: a sign-up grant, calls (debits), their request
    // records, events handed on by the relay, and a payment.
    const account = newAccountId();
    await store.createAccount(
      { id: account, email: null, tier: "business" },
      { amount: 100, requestId: `signup:${account}`, reason: "sign-up" },
      [],
    );
    const activity = async (label: string) => {
      for (let i = 0; i < 4; i++) {
        const requestId = newRequestId(clock);
        const admitted = await store.admit({
          accountId: account,
          keyHash: null,
          cost: 1,
          requestId,
          tool: "hash",
          reason: "tool call",
        });
        expect(admitted.status).toBe("ok");
        books!.recordRequest({
          accountId: account,
          requestId,
          at: clock,
          tool: "hash",
          keyId: null,
          status: 200,
          outcome: "ok",
          latencyMs: 3,
        });
        clock += 1000;
      }
      await store.logEvents(
        account,
        [
          eventRecord(
            newEventId(),
            "credits.low",
            account,
            {
              credits_remaining: 3,
              tool_name: label,
              threshold: 5,
            },
            new Date(clock),
          ),
          eventRecord(
            newEventId(),
            "tool.error",
            account,
            {
              tool_name: label,
              credits_charged: 0,
            },
            new Date(clock),
          ),
        ],
        null,
      );
      books!.recordPayment({
        id: `pay_${label}`,
        accountId: account,
        network: "base-sepolia",
        payer: `0x${"ab".repeat(20)}`,
        valueAtomic: "2000",
        credits: 1,
        type: "one_time",
        plan: null,
        txHash: `0x${"12".repeat(32)}`,
        settledAt: clock,
      });
    };
    const exported = async () => {
      for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
        const backlog = await store.ledgerBacklog({ limit: 10 });
        const [row] = await db.query<{ n: string | number }>(
          "SELECT count(*) AS n FROM request_records WHERE status IS NOT NULL",
        );
        if (backlog.items.length === 0 && Number(row!.n) === count.requests) return;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error("the books did not catch up in 30 s");
    };
    const count = { requests: 0 };

    await activity("december");
    count.requests += 4;
    await exported();
    // Midnight passes while the export loop runs.
    clock = JAN_1;
    await activity("january");
    count.requests += 4;
    await exported();

    const where = async (table: string, time: string) =>
      (
        await db.query<{
          partition: string;
          month: string;
          n: string | number;
        }>(
          `SELECT tableoid::regclass::text AS partition, to_char(${time} AT TIME ZONE 'UTC', 'YYYY-MM') AS month, count(*) AS n
             FROM ${table} GROUP BY 1, 2 ORDER BY 1, 2`,
        )
      ).map((r) => [r.partition, r.month, Number(r.n)]);
    // The sign-up grant and four debits in December, four debits in January.
    expect(await where("ledger_entries", "at")).toEqual([
      ["ledger_entries_y2026m12", "2026-12", 5],
      ["ledger_entries_y2027m01", "2027-01", 4],
    ]);
    expect(await where("request_records", "minted_at")).toEqual([
      ["request_records_y2026m12", "2026-12", 4],
      ["request_records_y2027m01", "2027-01", 4],
    ]);
    expect(await where("events", "at")).toEqual([
      ["events_y2026m12", "2026-12", 2],
      ["events_y2027m01", "2027-01", 2],
    ]);
    expect(await where("payments", "settled_at")).toEqual([
      ["payments_y2026m12", "2026-12", 1],
      ["payments_y2027m01", "2027-01", 1],
    ]);
    // Σ ledger = balance, across the boundary.
    const [sum] = await db.query<{ s: string | number }>(
      "SELECT sum(amount) AS s FROM ledger_entries WHERE account_id = $1",
      [account],
    );
    expect(Number(sum!.s)).toBe((await store.getAccount(account))!.balance);
    expect((await store.getAccount(account))!.balance).toBe(92);

    // The month turned: February's partitions are made ahead by the running loop.
    await books.exportNow();
    for (const table of TABLES)
      expect(await partitions(table)).toEqual(months(DEC_31, JAN_1, monthStart(JAN_1, 1))(table));
    expect(books.health()).toEqual({ state: "operational", detail: null });
    expect(warnings).toEqual([]);
  });
});
