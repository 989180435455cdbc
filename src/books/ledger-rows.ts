import type { LedgerEntry, LedgerKind } from "../store/types.js";
import { insertRows, type BooksDatabase } from "./database.js";

/**
 * Ledger entries as rows of `ledger_entries`: written by the exporter (insert keyed by account
 * and entry id, so a second export of an entry is a no-op), read by the usage API.
 */
const COLUMNS = [
  "account_id",
  "entry_ms",
  "entry_seq",
  "at",
  "kind",
  "amount",
  "balance",
  "reason",
  "request_id",
  "tool",
  "key_id",
] as const;

/** Inserts entries of one account; returns how many were new. */
export function insertLedgerEntries(
  query: BooksDatabase["query"],
  accountId: string,
  entries: LedgerEntry[],
): Promise<number> {
  const rows = entries.map((e) => {
    const [ms, seq] = e.id.split("-");
    return [
      accountId,
      ms,
      seq,
      new Date(e.at).toISOString(),
      e.kind,
      e.amount,
      e.balance,
      e.reason,
      e.requestId,
      e.tool,
      e.keyId,
    ];
  });
  return insertRows(query, "ledger_entries", COLUMNS, rows, "(account_id, entry_ms, entry_seq)");
}

export interface LedgerRow {
  entry_ms: string | number;
  entry_seq: string | number;
  at_ms: string | number;
  kind: string;
  amount: string | number;
  balance: string | number;
  reason: string;
  request_id: string;
  tool: string | null;
  key_id: string | null;
}

/** The columns a LedgerRow is read with (bigints as numbers or strings, whichever the driver gives). */
export const LEDGER_SELECT =
  "entry_ms, entry_seq, (extract(epoch from at) * 1000)::bigint AS at_ms, kind, amount, balance, reason, request_id, tool, key_id";

export function ledgerEntryOf(row: LedgerRow): LedgerEntry {
  return {
    id: `${row.entry_ms}-${row.entry_seq}`,
    at: Number(row.at_ms),
    kind: row.kind as LedgerKind,
    amount: Number(row.amount),
    balance: Number(row.balance),
    reason: row.reason,
    requestId: row.request_id,
    tool: row.tool,
    keyId: row.key_id,
  };
}
