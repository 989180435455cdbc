/**
 * How long migration 003 (the unpartitioned books become monthly partitions), the move of the old
 * request records after start-up and the split into months hold their locks, for a given size of
 * books. Builds the schema as it was after migration 002 in a fresh database on the PostgreSQL
 * server DATABASE_URL names, fills it with ROWS ledger entries and ROWS request records spread
 * over MONTHS months (generate_series, in the server), then times `migrate` (003 and 004), the
 * batches of `moveLegacyRequestRecords` and `splitDefaultPartitions`. The database is dropped afterwards.
 *
 *   DATABASE_URL=postgres://…/postgres ROWS=1000000 MONTHS=12 node --import tsx bench/books-migration.ts
 */
import pg from "pg";
import { openBooksDatabase } from "../src/books/database.js";
import { migrate } from "../src/books/migrations.js";
import { moveLegacyRequestRecords } from "../src/books/legacy-records.js";
import { splitDefaultPartitions } from "../src/books/partitions.js";
import { randomId } from "../src/lib/ids.js";

const server = process.env.DATABASE_URL;
if (!server?.startsWith("postgres")) {
  process.stderr.write("DATABASE_URL must name a PostgreSQL server (postgres://…)\n");
  process.exit(2);
}
const rows = Number(process.env.ROWS ?? 1_000_000);
const months = Number(process.env.MONTHS ?? 12);
const name = `books_bench_${randomId(8)}`;
const admin = new pg.Client(server);
await admin.connect();
await admin.query(`CREATE DATABASE ${name}`);
const url = new URL(server);
url.pathname = `/${name}`;
const db = await openBooksDatabase(url.toString(), { timeoutMs: 600_000 });
const seconds = (from: bigint) => (Number(process.hrtime.bigint() - from) / 1e9).toFixed(1);
try {
  await migrate(db, { through: 2 });
  const end = Date.UTC(2026, 10, 1);
  const span = months * 30 * 86_400_000;
  const filled = process.hrtime.bigint();
  // A thousand accounts; entries evenly over the months; request ids minted as newRequestId does.
  await db.query(
    `INSERT INTO ledger_entries (account_id, entry_ms, entry_seq, at, kind, amount, balance, reason, request_id, tool, key_id)
     SELECT 'acct_' || lpad((g % 1000)::text, 16, '0'), t, 0, to_timestamp(t / 1000.0), 'debit', -1, 1000,
            'tool call', 'req_' || lpad(to_hex(g), 20, '0'), 'hash', 'key_a'
       FROM generate_series(1, $1::int) AS g, LATERAL (SELECT ($2::bigint - (g::bigint * $3::bigint / $1::int)) AS t) AS x`,
    [rows, end, span],
  );
  await db.query(
    `INSERT INTO request_records (account_id, request_id, at, tool, key_id, status, outcome, latency_ms, charged, refunded)
     SELECT account_id, request_id, at, tool, key_id, 200, 'ok', 12, 1, 0 FROM ledger_entries`,
  );
  await db.query("ANALYZE");
  const [size] = await db.query<{ size: string }>(
    "SELECT pg_size_pretty(pg_database_size(current_database())) AS size",
  );
  process.stdout.write(
    `books before migration 003: ${rows} ledger entries and ${rows} request records over ${months} months, ${size!.size} (filled in ${seconds(filled)} s)\n`,
  );
  const migrating = process.hrtime.bigint();
  const applied = await migrate(db);
  process.stdout.write(
    `migrations ${applied.join(", ")}: ${seconds(migrating)} s in one transaction (the tables locked throughout)\n`,
  );
  const moving = process.hrtime.bigint();
  let batches = 0;
  let slowest = 0;
  for (let done = false; !done; batches++) {
    const batchStarted = process.hrtime.bigint();
    done = (await moveLegacyRequestRecords(db, { untilMs: 0 })).done;
    slowest = Math.max(slowest, Number(process.hrtime.bigint() - batchStarted) / 1e6);
  }
  process.stdout.write(
    `old request records moved after start-up: ${seconds(moving)} s in ${batches} transactions of 5,000 (the longest ${slowest.toFixed(0)} ms)\n`,
  );
  const splitting = process.hrtime.bigint();
  const created = await splitDefaultPartitions(db);
  process.stdout.write(
    `split into months: ${seconds(splitting)} s, ${created.length} partitions (one transaction per month and table)\n`,
  );
} finally {
  await db.close();
  await admin.query(`DROP DATABASE ${name}`);
  await admin.end();
}
