import { debitedNoLaterThan } from "../lib/ids.js";
import type { LedgerEntry } from "../store/types.js";
import type { BooksDatabase } from "./database.js";

/**
 * Request records — one row per keyed or paid tool call — written from two sources, neither of
 * which adds anything to the call's hot path:
 *
 * - the ledger (exactly once): the call's debit entry, written by the admission script in its one
 *   round trip, carries its time, tool, key and the credits charged; a failed call's refund entry,
 *   written by the refund step that happens anyway, carries the credits returned. The exporter
 *   applies them in the same transaction as it inserts the ledger rows, so a batch replayed after
 *   a crash sets the same values again.
 * - the serving process, after the call (its status, outcome code and latency, which only it
 *   knows): buffered and written with the other records (`records.ts`), best effort — a process
 *   that dies loses the timing of the calls it had not yet flushed, never the record or its money.
 *
 * Each source sets only its own columns of the row keyed by (account, request id), so the two
 * can arrive in either order. `credits` is a generated column: charged − refunded.
 *
 * The table is partitioned by month of `minted_at` (migration 003), which is part of the key: the
 * start of the 30-second slot the request id names, which both writers compute from the id alone
 * (1970-01-01, the default partition, for an id naming no slot).
 */
const mintedAt = (requestId: string) => new Date(debitedNoLaterThan(requestId)).toISOString();

export interface RequestTiming {
  accountId: string;
  requestId: string;
  /** When the call was admitted (the ledger's own time replaces it once the debit is exported). */
  at: number;
  tool: string;
  keyId: string | null;
  status: number;
  /** `ok`, or the error code the caller got. */
  outcome: string;
  latencyMs: number;
}

type Query = BooksDatabase["query"];

/** Upserts rows keyed by (account_id, request_id, minted_at), updating only `update` on a conflict. */
async function upsert(
  query: Query,
  columns: readonly string[],
  rows: unknown[][],
  update: readonly string[],
): Promise<void> {
  if (rows.length === 0) return;
  const params: unknown[] = [];
  const values = rows.map((row) => `(${row.map((value) => `$${params.push(value)}`).join(", ")})`);
  await query(
    `INSERT INTO request_records (${columns.join(", ")}) VALUES ${values.join(", ")}
     ON CONFLICT (account_id, request_id, minted_at) DO UPDATE SET ${update.map((c) => `${c} = EXCLUDED.${c}`).join(", ")}`,
    params,
  );
}

/** One row per request id (a statement may not touch a row twice): the last entry wins. */
const lastPerRequest = (entries: LedgerEntry[]) => [
  ...new Map(entries.map((e) => [e.requestId, e])).values(),
];

/**
 * Applies a batch of one account's ledger entries to its request records: a tool call's debit
 * sets time, tool, key and credits charged; its refund, the credits returned. Idempotent.
 */
export async function applyLedgerToRequests(
  query: Query,
  accountId: string,
  entries: LedgerEntry[],
): Promise<void> {
  const debits = lastPerRequest(entries.filter((e) => e.kind === "debit" && e.tool));
  await upsert(
    query,
    ["account_id", "request_id", "minted_at", "at", "tool", "key_id", "charged"],
    debits.map((e) => [
      accountId,
      e.requestId,
      mintedAt(e.requestId),
      new Date(e.at).toISOString(),
      e.tool,
      e.keyId,
      -e.amount,
    ]),
    ["at", "tool", "key_id", "charged"],
  );
  // Every refund (one made while Redis was failing may not name its tool): only a record's own matches.
  const refunds = lastPerRequest(entries.filter((e) => e.kind === "refund"));
  if (refunds.length === 0) return;
  // A refund always follows its debit in the account's stream, so the row is there already.
  await query(
    `UPDATE request_records r SET refunded = v.amount
       FROM unnest($2::text[], $3::timestamptz[], $4::bigint[]) AS v(request_id, minted_at, amount)
      WHERE r.account_id = $1 AND r.request_id = v.request_id AND r.minted_at = v.minted_at`,
    [
      accountId,
      refunds.map((e) => e.requestId),
      refunds.map((e) => mintedAt(e.requestId)),
      refunds.map((e) => String(e.amount)),
    ],
  );
}

/** Writes calls' timings (status, outcome, latency), creating the row when its debit is not exported yet. */
export function upsertRequestTimings(query: Query, timings: RequestTiming[]): Promise<void> {
  const rows = [...new Map(timings.map((t) => [`${t.accountId}\n${t.requestId}`, t])).values()];
  return upsert(
    query,
    [
      "account_id",
      "request_id",
      "minted_at",
      "at",
      "tool",
      "key_id",
      "status",
      "outcome",
      "latency_ms",
    ],
    rows.map((t) => [
      t.accountId,
      t.requestId,
      mintedAt(t.requestId),
      new Date(t.at).toISOString(),
      t.tool,
      t.keyId,
      t.status,
      t.outcome,
      Math.round(t.latencyMs),
    ]),
    ["status", "outcome", "latency_ms"],
  );
}
