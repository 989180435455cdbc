import type { BooksDatabase } from "./database.js";
import { PARTITION_LOCK } from "./partitions.js";

/**
 * Request records written before migration 003 (monthly partitions) are moved into the partitioned
 * table after start-up, in batches, each its own short transaction, rather than copied in the
 * migration's one transaction (which would lock the books for as long as the copy takes: about
 * 35 µs a record measured, minutes for millions). Migration 003 set the old table aside as
 * `request_records_unpartitioned`; every process moves batches from it while it exists (under the
 * partitions' advisory lock, so two processes never move the same rows) and the one that finds it
 * empty drops it.
 *
 * A record may meanwhile have been written again in the new table (a call made just before the
 * upgrade whose refund or timing arrived after): its facts are set once and never change, so the
 * two rows merge by taking what each knows (the timing where the new row has none, the larger of
 * the credits charged and refunded). Until a record is moved, analytics does not count it.
 */
const LEGACY = "request_records_unpartitioned";
const COLUMNS =
  "account_id, request_id, at, tool, key_id, status, outcome, latency_ms, charged, refunded";

export interface LegacyMove {
  moved: number;
  /** The old table is gone (now, or before): nothing is left to move. */
  done: boolean;
  /** This call found the old table empty and dropped it. */
  dropped: boolean;
}

/** Moves batches of old records until none is left or `untilMs` (epoch ms) has passed. */
export async function moveLegacyRequestRecords(
  db: BooksDatabase,
  options: { batch?: number; untilMs?: number } = {},
): Promise<LegacyMove> {
  const batch = options.batch ?? 5000;
  let moved = 0;
  for (;;) {
    const step = await db.transaction(async (query) => {
      await query("SELECT pg_advisory_xact_lock($1)", [PARTITION_LOCK]);
      const [found] = await query<{ found: string | null }>(
        "SELECT to_regclass($1)::text AS found",
        [LEGACY],
      );
      if (!found?.found) return null;
      const rows = await query(
        `WITH moved AS (
           DELETE FROM ${LEGACY}
            WHERE ctid = ANY (ARRAY(SELECT ctid FROM ${LEGACY} LIMIT ${batch}))
           RETURNING ${COLUMNS})
         INSERT INTO request_records AS r (minted_at, ${COLUMNS})
         SELECT books_request_minted_at(request_id), ${COLUMNS} FROM moved
         ON CONFLICT (account_id, request_id, minted_at) DO UPDATE SET
           status = coalesce(r.status, EXCLUDED.status),
           outcome = coalesce(r.outcome, EXCLUDED.outcome),
           latency_ms = coalesce(r.latency_ms, EXCLUDED.latency_ms),
           charged = greatest(r.charged, EXCLUDED.charged),
           refunded = greatest(r.refunded, EXCLUDED.refunded)
         RETURNING 1`,
      );
      if (rows.length === 0) await query(`DROP TABLE ${LEGACY}`);
      return rows.length;
    });
    if (step === null) return { moved, done: true, dropped: false };
    moved += step;
    if (step === 0) return { moved, done: true, dropped: true };
    if (options.untilMs !== undefined && Date.now() > options.untilMs)
      return { moved, done: false, dropped: false };
  }
}
