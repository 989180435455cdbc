import type { BooksDatabase } from "./database.js";

/**
 * The books' monthly partitions (migrations 003 and 004): `ledger_entries` by the stream id's
 * milliseconds, `request_records` by the request id's slot (`minted_at`), `events` by the event's
 * own timestamp, `payments` by their settlement time. Every process creates the current and the
 * next month's partitions at start-up and again when the month turns, so rows normally land in
 * their month; a row for a month with no partition yet lands in the table's
 * DEFAULT partition, and creating that month's partition moves such rows into it (PostgreSQL
 * refuses a partition whose range the default still holds rows of). Start-up also splits out
 * every month found in the default partition (after migration 003, all existing rows).
 *
 * Idempotent and safe across processes: a partition that exists is left alone, and creating one
 * runs in a transaction under an advisory lock, re-checking under it — in pg_class itself, read
 * afresh: `to_regclass` answers from the session's catalog cache, brought up to date when the
 * transaction began, so a process that had waited on the lock did not see the partition the
 * other had just made, and failed with `relation "…" already exists` (two first starts at once). Retention is the operator's:
 * a month is dropped with `DROP TABLE ledger_entries_y2026m01` (see README).
 */
type Query = BooksDatabase["query"];

/** Any constant other than the migrations': the advisory lock taken while creating partitions. */
export const PARTITION_LOCK = 7_402_003;

interface PartitionedTable {
  name: "ledger_entries" | "request_records" | "events" | "payments";
  /** The partition column's bound for a month starting at `ms` (epoch ms, UTC), as SQL. */
  bound: (ms: number) => string;
  /** The first day of each month of rows in the default partition (epoch ms), as SQL. */
  monthsInDefault: string;
  /** The columns written on insert (the generated `credits` is not). */
  columns: string;
  key: string;
}

const timestampBound = (ms: number) => `'${new Date(ms).toISOString()}'`;
const monthsOf = (table: string, column: string) =>
  `SELECT DISTINCT (extract(epoch FROM date_trunc('month', ${column}, 'UTC')) * 1000)::bigint AS month
     FROM ${table}_default`;

const TABLES: PartitionedTable[] = [
  {
    name: "ledger_entries",
    bound: (ms) => String(ms),
    monthsInDefault: `SELECT DISTINCT (extract(epoch FROM date_trunc('month', to_timestamp(entry_ms / 1000.0), 'UTC')) * 1000)::bigint AS month
                        FROM ledger_entries_default`,
    columns:
      "account_id, entry_ms, entry_seq, at, kind, amount, balance, reason, request_id, tool, key_id, exported_at",
    key: "entry_ms",
  },
  {
    name: "request_records",
    bound: timestampBound,
    // The ids naming no slot (minted_at = 1970-01-01) stay in the default partition.
    monthsInDefault: `SELECT DISTINCT (extract(epoch FROM date_trunc('month', minted_at, 'UTC')) * 1000)::bigint AS month
                        FROM request_records_default WHERE minted_at > to_timestamp(0)`,
    columns:
      "account_id, request_id, minted_at, at, tool, key_id, status, outcome, latency_ms, charged, refunded",
    key: "minted_at",
  },
  {
    name: "events",
    bound: timestampBound,
    monthsInDefault: monthsOf("events", "at"),
    columns: "account_id, at, id, type, data, exported_at",
    key: "at",
  },
  {
    name: "payments",
    bound: timestampBound,
    monthsInDefault: monthsOf("payments", "settled_at"),
    columns:
      "id, account_id, network, payer, value_atomic, credits, type, plan, tx_hash, settled_at",
    key: "settled_at",
  },
];

/** The first instant (epoch ms, UTC) of the month `ms` falls in, `ahead` months later. */
export function monthStart(ms: number, ahead = 0): number {
  const date = new Date(ms);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + ahead, 1);
}

/** `ledger_entries_y2026m11`: the partition of `table` for the month starting at `ms`. */
export function partitionName(table: string, ms: number): string {
  const date = new Date(ms);
  return `${table}_y${date.getUTCFullYear()}m${String(date.getUTCMonth() + 1).padStart(2, "0")}`;
}

/** Whether the committed catalog holds `name` now (read with this statement's snapshot, not the session's catalog cache). */
async function existsNow(query: Query, name: string): Promise<boolean> {
  const rows = await query<{ found: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                     WHERE c.relname = $1 AND n.nspname = current_schema()) AS found`,
    [name],
  );
  return rows[0]?.found === true;
}

async function exists(query: Query, name: string): Promise<boolean> {
  const rows = await query<{ found: string | null }>("SELECT to_regclass($1)::text AS found", [
    name,
  ]);
  return rows[0]?.found != null;
}

/** Creates `table`'s partition for the month starting at `ms`, moving its rows out of the default partition. */
async function createMonth(
  db: BooksDatabase,
  table: PartitionedTable,
  ms: number,
): Promise<boolean> {
  const name = partitionName(table.name, ms);
  if (await exists(db.query, name)) return false;
  return db.transaction(async (query) => {
    await query("SELECT pg_advisory_xact_lock($1)", [PARTITION_LOCK]);
    if (await existsNow(query, name)) return false; // another process made it meanwhile
    const from = table.bound(ms);
    const to = table.bound(monthStart(ms, 1));
    const range = `${table.key} >= ${from} AND ${table.key} < ${to}`;
    await query(`CREATE TEMPORARY TABLE books_moving ON COMMIT DROP AS
                   SELECT ${table.columns} FROM ${table.name}_default WHERE false`);
    await query(`WITH moved AS (DELETE FROM ${table.name}_default WHERE ${range} RETURNING ${table.columns})
                 INSERT INTO books_moving SELECT * FROM moved`);
    await query(
      // IF NOT EXISTS as well: creating a partition twice is never an error.
      `CREATE TABLE IF NOT EXISTS ${name} PARTITION OF ${table.name} FOR VALUES FROM (${from}) TO (${to})`,
    );
    await query(
      `INSERT INTO ${table.name} (${table.columns}) SELECT ${table.columns} FROM books_moving`,
    );
    return true;
  });
}

/** Ensures the partitions of the months starting at `months` (epoch ms); returns the ones it created. */
export async function ensurePartitions(db: BooksDatabase, months: number[]): Promise<string[]> {
  const created: string[] = [];
  for (const table of TABLES)
    for (const ms of new Set(months.map((m) => monthStart(m))))
      if (await createMonth(db, table, ms)) created.push(partitionName(table.name, ms));
  return created;
}

/** The current and next months' partitions. */
export const ensurePartitionsAhead = (db: BooksDatabase, now = Date.now()) =>
  ensurePartitions(db, [monthStart(now), monthStart(now, 1)]);

/** At start-up: the months ahead, and every month with rows waiting in a default partition. */
export async function splitDefaultPartitions(
  db: BooksDatabase,
  now = Date.now(),
): Promise<string[]> {
  const created = await ensurePartitionsAhead(db, now);
  for (const table of TABLES) {
    const rows = await db.query<{ month: string | number }>(table.monthsInDefault);
    for (const row of rows) {
      const ms = Number(row.month);
      if (await createMonth(db, table, ms)) created.push(partitionName(table.name, ms));
    }
  }
  return created;
}
