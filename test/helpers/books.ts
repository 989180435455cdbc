import type { LedgerEntry, Store } from "../../src/store/types.js";

/** An account's whole ledger, newest first (every page). */
export async function ledgerOf(store: Store, accountId: string): Promise<LedgerEntry[]> {
  const entries: LedgerEntry[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.ledger(accountId, { cursor, limit: 100 });
    entries.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return entries;
}
