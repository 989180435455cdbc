import type { LedgerEntry, Store } from "../store/types.js";
import type { BooksDatabase } from "./database.js";

/**
 * Reconciliation: for every account, the sum of its ledger — the books' rows, plus the entries
 * the store has not exported yet, each entry counted once — equals its balance. Read in an order
 * that cannot miss an entry the exporter moves meanwhile (the store first, then the books), and
 * retried when a call changes the balance during the reading.
 */
export interface BooksMismatch {
  accountId: string;
  balance: number;
  ledgerSum: number;
}

export interface BooksCheck {
  accounts: number;
  entries: number;
  mismatches: BooksMismatch[];
}

const ATTEMPTS = 5;

export async function checkBooks(store: Store, db: BooksDatabase): Promise<BooksCheck> {
  const result: BooksCheck = { accounts: 0, entries: 0, mismatches: [] };
  let cursor: string | undefined;
  do {
    const page = await store.listAccounts({ cursor, limit: 100 });
    for (const account of page.items) {
      result.accounts++;
      for (let attempt = 1; ; attempt++) {
        const before = (await store.getAccount(account.id))?.balance ?? 0;
        const { sum, entries } = await ledgerSum(store, db, account.id);
        const after = (await store.getAccount(account.id))?.balance ?? 0;
        if (before !== after && attempt < ATTEMPTS) continue; // calls moved the balance while we read
        result.entries += entries;
        if (sum !== after)
          result.mismatches.push({ accountId: account.id, balance: after, ledgerSum: sum });
        break;
      }
    }
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return result;
}

async function ledgerSum(
  store: Store,
  db: BooksDatabase,
  accountId: string,
): Promise<{ sum: number; entries: number }> {
  const held = await heldLedger(store, accountId);
  const heldIds = held.map((e) => e.id);
  const [row] = await db.query<{
    sum: string | number | null;
    entries: string | number;
    overlap: string | number | null;
    overlapping: string | number;
  }>(
    `SELECT sum(amount) AS sum, count(*) AS entries,
            sum(amount) FILTER (WHERE (entry_ms || '-' || entry_seq) = ANY($2::text[])) AS overlap,
            count(*) FILTER (WHERE (entry_ms || '-' || entry_seq) = ANY($2::text[])) AS overlapping
       FROM ledger_entries WHERE account_id = $1`,
    [accountId, heldIds],
  );
  const inStore = held.reduce((n, e) => n + e.amount, 0);
  return {
    sum: inStore + Number(row?.sum ?? 0) - Number(row?.overlap ?? 0),
    entries: held.length + Number(row?.entries ?? 0) - Number(row?.overlapping ?? 0),
  };
}

/** Every ledger entry the store still holds for an account (all of them, without the books), newest first. */
export async function heldLedger(store: Store, accountId: string): Promise<LedgerEntry[]> {
  const entries: LedgerEntry[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.ledger(accountId, { cursor, limit: 1000 });
    entries.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return entries;
}

export interface EventsCheck {
  events: number;
  /** Event ids held more than once (under another time or account): each should be in the books once. */
  duplicates: { id: string; rows: number }[];
}

/**
 * Every event is in the books once. The table's key is (account, time, id), so a re-export of an
 * event is caught by it only because an event's time and account never change; this proves it.
 */
export async function checkEvents(db: BooksDatabase): Promise<EventsCheck> {
  const [total] = await db.query<{ n: string | number }>("SELECT count(*) AS n FROM events");
  const duplicates = await db.query<{ id: string; rows: string | number }>(
    "SELECT id, count(*) AS rows FROM events GROUP BY id HAVING count(*) > 1 ORDER BY id",
  );
  return {
    events: Number(total?.n ?? 0),
    duplicates: duplicates.map((d) => ({ id: d.id, rows: Number(d.rows) })),
  };
}
