import { createHash } from "node:crypto";
import type { LedgerBacklog, Store } from "../store/types.js";
import type { BooksDatabase } from "./database.js";
import { exportEvents } from "./events.js";
import { insertLedgerEntries } from "./ledger-rows.js";
import { applyLedgerToRequests } from "./requests.js";

/**
 * Moves ledger entries and account events from the store (Redis, or the in-memory store) to the
 * books' database, exactly once: each batch is inserted keyed by (account, entry id) — an event's
 * by (account, time, id), see events.ts — with ON CONFLICT DO NOTHING and committed, and only
 * then trimmed from the store up to its last id (events: forgotten by id). A process that
 * dies between the two leaves the batch in both; the next export inserts nothing and trims it.
 *
 * Every process runs an exporter. Accounts are spread over `shards`; a process exports a shard
 * only while it holds that shard's lease in the store (shared by every process), so one process
 * works on an account at a time. A lease outlived by its holder (SIGKILL) simply expires.
 */
export interface ExporterSettings {
  /** Entries per insert. */
  batchSize: number;
  /** How long a shard's lease lasts; a pass gives a shard up at half of it. */
  leaseMs: number;
  shards: number;
}

export interface ExportPass {
  /** Ledger entries newly inserted into the books by this pass. */
  exported: number;
  /** Events newly inserted into the books by this pass. */
  events: number;
  /** Age of the oldest entry still waiting in the store when the pass began (0 when none). */
  lagMs: number;
}

/** How many accounts' backlogs are looked up per store round trip. */
const BACKLOG_PAGE = 500;

export const shardOf = (accountId: string, shards: number) =>
  createHash("sha256").update(accountId).digest().readUInt32BE(0) % shards;

/** One pass over every account with a backlog; `onLag` hears the backlog's age before any export is tried (so it is known while the database is down). */
export async function exportPass(
  store: Store,
  db: BooksDatabase,
  settings: ExporterSettings,
  onLag: (lagMs: number) => void,
  now = Date.now,
): Promise<ExportPass> {
  const started = now();
  const byShard = new Map<number, LedgerBacklog[]>();
  let oldest = Infinity;
  let cursor: string | undefined;
  do {
    const page = await store.ledgerBacklog({ cursor, limit: BACKLOG_PAGE });
    for (const backlog of page.items) {
      oldest = Math.min(oldest, backlog.oldestAt);
      const shard = shardOf(backlog.accountId, settings.shards);
      byShard.set(shard, [...(byShard.get(shard) ?? []), backlog]);
    }
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  const lagMs = oldest === Infinity ? 0 : Math.max(0, started - oldest);
  onLag(lagMs);

  const done = { exported: 0, events: 0 };
  for (const [shard, accounts] of byShard) {
    const lease = `books-export:${shard}`;
    const token = await store.acquireLock(lease, settings.leaseMs);
    if (!token) continue; // another process is exporting this shard
    const leaseEnds = now() + settings.leaseMs / 2;
    try {
      for (const { accountId } of accounts) {
        const account = await exportAccount(
          store,
          db,
          accountId,
          settings.batchSize,
          leaseEnds,
          now,
        );
        done.exported += account.exported;
        done.events += account.events;
        if (now() > leaseEnds) break; // the next pass takes up the rest under a fresh lease
      }
    } finally {
      await store.releaseLock(lease, token).catch(() => undefined);
    }
  }
  return { ...done, lagMs };
}

async function exportAccount(
  store: Store,
  db: BooksDatabase,
  accountId: string,
  batchSize: number,
  leaseEnds: number,
  now: () => number,
): Promise<{ exported: number; events: number }> {
  let exported = 0;
  let inserted = 0;
  for (;;) {
    const entries = await store.oldestLedger(accountId, batchSize);
    if (entries.length === 0) break;
    // The calls' request records (from their debits and refunds) in the same transaction.
    exported += await db.transaction(async (query) => {
      const inserted = await insertLedgerEntries(query, accountId, entries);
      await applyLedgerToRequests(query, accountId, entries);
      return inserted;
    });
    // Committed: only now may the store forget them.
    await store.trimLedger(accountId, entries.at(-1)!.id);
    if (entries.length < batchSize) break;
    if (now() > leaseEnds) return { exported, events: 0 };
  }
  // The account's events, the same way: inserted keyed by (account, time, id) and committed,
  // only then forgotten by the store's event log.
  for (;;) {
    const events = await store.oldestLoggedEvents(accountId, batchSize);
    if (events.length === 0) break;
    inserted += await exportEvents(db, events);
    await store.forgetLoggedEvents(accountId, events);
    if (events.length < batchSize || now() > leaseEnds) break;
  }
  return { exported, events: inserted };
}
