import { afterEach, expect, it } from "vitest";
import { openBooksDatabase, type BooksDatabase } from "../../src/books/database.js";
import { migrate } from "../../src/books/migrations.js";
import { ensurePartitions, monthStart, partitionName } from "../../src/books/partitions.js";
import { freshDatabase } from "../helpers/postgres.js";

/**
 * Two processes starting at once on an empty PostgreSQL both create the months' partitions: the
 * one that waited on the other's advisory lock must find the partition made meanwhile and leave
 * it, not fail with `relation "ledger_entries_y2026m11" already exists` (its cached catalog, read
 * when its transaction began, did not have the table yet).
 */
const opened: BooksDatabase[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((db) => db.close()));
});

it("creates each month's partitions once when two processes race, without an error", async () => {
  const url = await freshDatabase();
  const [a, b] = await Promise.all([openBooksDatabase(url), openBooksDatabase(url)]);
  opened.push(a!, b!);
  await migrate(a!);
  // Many months, each created by both at once: the race is in every one of them.
  const months = Array.from({ length: 24 }, (_, i) => monthStart(Date.UTC(2030, 0, 15), i));
  const created = await Promise.all([a!, b!].map((db) => ensurePartitions(db, months)));
  const names = ["ledger_entries", "request_records", "events", "payments"].flatMap((table) =>
    months.map((ms) => partitionName(table, ms)),
  );
  // Each partition made by exactly one of them.
  expect([...created[0]!, ...created[1]!].sort()).toEqual([...names].sort());
  const rows = await a!.query<{ n: string | number }>(
    "SELECT count(*) AS n FROM pg_class WHERE relname = ANY($1::text[])",
    [names],
  );
  expect(Number(rows[0]!.n)).toBe(names.length);
}, 120_000);
