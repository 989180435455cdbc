import {
  checkLedgerCursor,
  type LedgerEntry,
  type LedgerKind,
  type Page,
  type Store,
} from "../store/types.js";
import type { BooksDatabase } from "./database.js";
import { LEDGER_SELECT, ledgerEntryOf, type LedgerRow } from "./ledger-rows.js";

/**
 * An account's ledger, newest first, filtered and paged by entry id (keyset: the cursor is the
 * last id seen, exclusive — the contract the usage API always had). With the books on, the
 * answer is the books' rows merged with the entries the store still holds (not yet exported);
 * an entry in both (exported, not yet trimmed) is listed once. Without the books, the store's.
 */
export interface UsageFilter {
  tool?: string;
  keyId?: string;
  kind?: LedgerKind;
  /** Epoch ms, inclusive. */
  from?: number;
  /** Epoch ms, exclusive. */
  to?: number;
}

const INT8_MAX = 2n ** 63n - 1n;
/** Store entries read per round trip while looking for matches among those not yet exported. */
const STORE_PAGE = 200;

const idParts = (id: string) => id.split("-").map(BigInt) as [bigint, bigint];
/** Ledger ids in order (stream ids: milliseconds, then a sequence): negative when `a` is older. */
export const compareLedgerIds = (a: string, b: string): number => {
  const [am, as] = idParts(a);
  const [bm, bs] = idParts(b);
  return am !== bm ? (am > bm ? 1 : -1) : as === bs ? 0 : as > bs ? 1 : -1;
};
const newerFirst = (a: LedgerEntry, b: LedgerEntry) => compareLedgerIds(b.id, a.id);

export function matches(entry: LedgerEntry, filter: UsageFilter): boolean {
  return (
    (filter.tool === undefined || entry.tool === filter.tool) &&
    (filter.keyId === undefined || entry.keyId === filter.keyId) &&
    (filter.kind === undefined || entry.kind === filter.kind) &&
    (filter.from === undefined || entry.at >= filter.from) &&
    (filter.to === undefined || entry.at < filter.to)
  );
}

export async function usagePage(
  store: Store,
  db: BooksDatabase | null,
  accountId: string,
  filter: UsageFilter,
  page: { cursor?: string; limit: number },
): Promise<Page<LedgerEntry>> {
  checkLedgerCursor(page.cursor);
  const wanted = page.limit + 1;
  // The store first, the books after, never both at once: the exporter commits an entry to the
  // books before the store forgets it, so an entry the store read missed is in the books by the
  // time they are read. Read side by side, a books read that began before the commit and a store
  // read after the trim both missed it, and the page skipped it for good (its cursor moved on).
  const fromStore = await storeMatches(store, accountId, filter, page.cursor, wanted);
  const fromBooks = db ? await booksMatches(db, accountId, filter, page.cursor, wanted) : [];
  const seen = new Set<string>();
  const merged = [...fromStore, ...fromBooks]
    .filter((e) => !seen.has(e.id) && seen.add(e.id))
    .sort(newerFirst)
    .slice(0, wanted);
  return {
    items: merged.slice(0, page.limit),
    nextCursor: merged.length > page.limit ? merged[page.limit - 1]!.id : null,
  };
}

/** The store's entries (all, with the books off; the not-yet-exported ones, with them on) matching the filter. */
async function storeMatches(
  store: Store,
  accountId: string,
  filter: UsageFilter,
  cursor: string | undefined,
  wanted: number,
): Promise<LedgerEntry[]> {
  const found: LedgerEntry[] = [];
  do {
    const page = await store.ledger(accountId, { cursor, limit: STORE_PAGE });
    for (const entry of page.items) {
      if (filter.from !== undefined && entry.at < filter.from) return found; // older still: none can match
      if (matches(entry, filter)) found.push(entry);
      if (found.length >= wanted) return found;
    }
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return found;
}

async function booksMatches(
  db: BooksDatabase,
  accountId: string,
  filter: UsageFilter,
  cursor: string | undefined,
  wanted: number,
): Promise<LedgerEntry[]> {
  const params: unknown[] = [accountId];
  const where = ["account_id = $1"];
  const add = (clause: (n: string) => string, value: unknown) =>
    where.push(clause(`$${params.push(value)}`));
  if (cursor !== undefined) {
    // Ids past PostgreSQL's bigint are past every real entry: "older than it" is then everything.
    const [ms, seq] = idParts(cursor).map((part) => (part > INT8_MAX ? INT8_MAX : part)) as [
      bigint,
      bigint,
    ];
    const msParam = `$${params.push(ms.toString())}`;
    const seqParam = `$${params.push(seq.toString())}`;
    where.push(`(entry_ms, entry_seq) < (${msParam}::bigint, ${seqParam}::bigint)`);
  }
  if (filter.tool !== undefined) add((p) => `tool = ${p}`, filter.tool);
  if (filter.keyId !== undefined) add((p) => `key_id = ${p}`, filter.keyId);
  if (filter.kind !== undefined) add((p) => `kind = ${p}`, filter.kind);
  if (filter.from !== undefined) {
    add((p) => `at >= ${p}`, new Date(filter.from).toISOString());
    // Lets PostgreSQL skip the older months (the table is partitioned by entry_ms): an entry's id
    // is taken when it is written, so its milliseconds are its time's (a minute of margin).
    add((p) => `entry_ms >= ${p}::bigint`, String(filter.from - 60_000));
  }
  if (filter.to !== undefined) add((p) => `at < ${p}`, new Date(filter.to).toISOString());
  const rows = await db.query<LedgerRow>(
    `SELECT ${LEDGER_SELECT} FROM ledger_entries WHERE ${where.join(" AND ")} ORDER BY entry_ms DESC, entry_seq DESC LIMIT ${wanted}`,
    params,
  );
  return rows.map(ledgerEntryOf);
}
