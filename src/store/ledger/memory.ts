/** Each account's ledger in memory: an array on the account, ids `<ms>-<sequence>` like a stream's. */
import type { MemoryState } from "../memory-state.js";
import {
  checkLedgerCursor,
  type LedgerBacklog,
  type LedgerEntry,
  type LedgerFollower,
  type Page,
} from "../types.js";
import type { LedgerStore } from "./index.js";

export function memoryLedger(state: MemoryState): LedgerStore {
  return {
    async ledger(
      accountId: string,
      page: { cursor?: string; limit: number },
    ): Promise<Page<LedgerEntry>> {
      checkLedgerCursor(page.cursor);
      // Entries strictly older than the cursor, as Redis's exclusive XREVRANGE does (the cursor's own entry need not exist).
      const cursor = page.cursor?.split("-").map(BigInt);
      const older = (id: string) => {
        const [ms, seq] = id.split("-").map(BigInt) as [bigint, bigint];
        return ms < cursor![0]! || (ms === cursor![0]! && seq < cursor![1]!);
      };
      const entries = [...(state.accounts.get(accountId)?.ledger ?? [])]
        .reverse()
        .filter((e) => cursor === undefined || older(e.id));
      const slice = entries.slice(0, page.limit + 1);
      return {
        items: slice.slice(0, page.limit),
        nextCursor: slice.length > page.limit ? slice[page.limit - 1]!.id : null,
      };
    },

    async oldestLedger(accountId: string, limit: number): Promise<LedgerEntry[]> {
      return (state.accounts.get(accountId)?.ledger ?? []).slice(0, limit);
    },

    async trimLedger(accountId: string, throughId: string): Promise<void> {
      const a = state.accounts.get(accountId);
      if (!a) return;
      const [ms, seq] = throughId.split("-").map(BigInt) as [bigint, bigint];
      a.ledger = a.ledger.filter((e) => {
        const [ems, eseq] = e.id.split("-").map(BigInt) as [bigint, bigint];
        return ems > ms || (ems === ms && eseq > seq);
      });
    },

    async ledgerBacklog(page: { cursor?: string; limit: number }): Promise<Page<LedgerBacklog>> {
      const start = page.cursor ? Number(page.cursor) : 0;
      const accounts = [...state.accounts.values()].slice(start, start + page.limit);
      const items = accounts.flatMap((a) => {
        const oldestEvent = state.eventLogs.get(a.id)?.at(-1);
        const times = [a.ledger[0]?.at, oldestEvent && Date.parse(oldestEvent.timestamp)].filter(
          (t): t is number => typeof t === "number",
        );
        return times.length > 0 ? [{ accountId: a.id, oldestAt: Math.min(...times) }] : [];
      });
      return {
        items,
        nextCursor: accounts.length === page.limit ? String(start + page.limit) : null,
      };
    },

    followLedger(accountId: string): LedgerFollower {
      const abort = new AbortController();
      const newer = (afterId: string) => {
        const [ms, seq] = afterId.split("-").map(BigInt) as [bigint, bigint];
        return (state.accounts.get(accountId)?.ledger ?? []).filter((e) => {
          const [ems, eseq] = e.id.split("-").map(BigInt) as [bigint, bigint];
          return ems > ms || (ems === ms && eseq > seq);
        });
      };
      const grew = state.ledgerGrew;
      return {
        async next(afterId, waitMs) {
          const deadline = Date.now() + waitMs;
          for (;;) {
            const entries = newer(afterId);
            const left = deadline - Date.now();
            if (entries.length > 0 || left <= 0 || abort.signal.aborted) return entries;
            await new Promise<void>((resolve) => {
              const timer = setTimeout(done, left);
              function done() {
                clearTimeout(timer);
                grew.off(accountId, done);
                abort.signal.removeEventListener("abort", done);
                resolve();
              }
              grew.on(accountId, done);
              abort.signal.addEventListener("abort", done);
            });
          }
        },
        async close() {
          abort.abort();
        },
      };
    },
  };
}
