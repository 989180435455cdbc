import type { LedgerBacklog, LedgerEntry, LedgerFollower, Page } from "../types.js";

/** Each account's ledger as the store holds it until the books (PostgreSQL) take it over. */
export interface LedgerStore {
  /**
   * Newest first: the entries the store still holds (with the books on, those not yet exported
   * and trimmed). Throws InvalidCursorError for a cursor that is not a ledger entry id.
   */
  ledger(accountId: string, page: { cursor?: string; limit: number }): Promise<Page<LedgerEntry>>;
  /** The store's oldest ledger entries of an account, oldest first: what the books exporter moves next. */
  oldestLedger(accountId: string, limit: number): Promise<LedgerEntry[]>;
  /** Forgets an account's ledger entries up to and including `throughId`, once the books hold them. */
  trimLedger(accountId: string, throughId: string): Promise<void>;
  /**
   * Accounts (in pages of the account list, oldest first) with ledger entries or logged events
   * still in the store (`oldestAt`: the oldest of either); `nextCursor` pages on through every
   * account, whether or not it had a backlog.
   */
  ledgerBacklog(page: { cursor?: string; limit: number }): Promise<Page<LedgerBacklog>>;
  /**
   * Follows the account's ledger as it grows, across every process writing it: a follower holds
   * its own connection (a blocking read), so it is closed when its reader goes away.
   */
  followLedger(accountId: string): LedgerFollower;
}
