import type { Logger } from "pino";
import type { Config } from "../config.js";
import type { Metrics } from "../http/metrics.js";
import { every } from "../lib/periodic.js";
import type { Store } from "../store/types.js";
import { BooksUnavailableError } from "./errors.js";
import { openBooksDatabase, type BooksDatabase } from "./database.js";
import { exportPass } from "./exporter.js";
import { moveLegacyRequestRecords } from "./legacy-records.js";
import { migrate } from "./migrations.js";
import { ensurePartitionsAhead, monthStart, splitDefaultPartitions } from "./partitions.js";
import { RecordBuffer, type PaymentRow, type RequestRecord } from "./records.js";

/**
 * The books: PostgreSQL (or PGlite) as the system of record for the ledger, request records,
 * account events and payments. The hot path never touches it: calls are admitted and charged
 * in the store (one round trip), and this process's exporter moves what they wrote to the
 * database in the background. The database is opened and migrated in the background too,
 * retried until it answers, so a database that is down (or PGlite still starting) never stops
 * the gateway.
 */
export interface Books {
  /** The database once it is open and migrated; null before (nothing can have been exported yet). */
  database(): BooksDatabase | null;
  /** The database, waiting for it at most `ms`; BooksUnavailableError when it is not there by then. */
  ready(ms: number): Promise<BooksDatabase>;
  recordRequest(record: RequestRecord): void;
  recordPayment(row: PaymentRow): void;
  /** One export pass now (the background loop runs them every BOOKS_EXPORT_INTERVAL_MS). */
  exportNow(): Promise<void>;
  /** Whether the export keeps up, for the status page. */
  health(): { state: "operational" | "degraded"; detail: string | null };
  stop(): Promise<void>;
}

export type BooksSettings = NonNullable<Config["books"]>;

const OPEN_RETRY_MS = 2000;
const RECORD_BUFFER = 50_000;

/**
 * Starts the books. PGlite is opened and migrated before this resolves: its start-up runs on
 * this thread (seconds of WebAssembly) and must be over before the gateway serves. A PostgreSQL
 * server is opened in the background, retried until it answers.
 */
export async function startBooks(
  deps: {
    store: Store;
    log: Logger;
    metrics: Metrics;
    /** The clock that says which month it is (tests cross a month boundary with their own). */
    now?: () => number;
  },
  settings: BooksSettings,
): Promise<Books> {
  const { store, log, metrics } = deps;
  const now = deps.now ?? Date.now;
  const buffer = new RecordBuffer(RECORD_BUFFER);
  let db: BooksDatabase | null = null;
  let stopped = false;
  let lagMs = 0;
  let lastSuccessAt = now();
  let lastError: { message: string; at: number } | null = null;
  /** The month whose partitions (and the next month's) are known to exist. */
  let partitionsMonth = 0;
  /** Whether the request records from before migration 003 are known to be all moved. */
  let legacyMoved = false;
  metrics.onScrape(() => {
    metrics.booksExportLag.set(lagMs / 1000);
    metrics.booksRecordsDropped.set(buffer.dropped);
  });

  const open = async () => {
    const candidate = await openBooksDatabase(settings.url);
    try {
      const applied = await migrate(candidate);
      const partitions = await splitDefaultPartitions(candidate, now());
      partitionsMonth = monthStart(now());
      log.info(
        { database: candidate.kind, migrations_applied: applied, partitions_created: partitions },
        "books database ready",
      );
      return candidate;
    } catch (err) {
      await candidate.close().catch(() => undefined);
      throw err;
    }
  };
  const embedded = settings.url.startsWith("pglite:");
  if (embedded) db = await open();
  const opening = embedded
    ? Promise.resolve()
    : (async () => {
        for (let attempt = 1; !stopped; attempt++) {
          try {
            const opened = await open();
            if (stopped) return void (await opened.close());
            db = opened;
            return;
          } catch (err) {
            lastError = { message: (err as Error).message, at: now() };
            if (attempt === 1 || attempt % 30 === 0)
              log.warn(
                { err: (err as Error).message },
                "the books database cannot be opened yet; calls are served and charged, the export waits",
              );
            await new Promise((r) => setTimeout(r, OPEN_RETRY_MS).unref());
          }
        }
      })();

  const pass = async () => {
    if (!db) return;
    const month = monthStart(now());
    if (month !== partitionsMonth) {
      // The month turned: the next one's partitions. Until they exist rows land in the default
      // partition (still written exactly once), so a failure here is logged, not the export's.
      await ensurePartitionsAhead(db, now())
        .then(() => void (partitionsMonth = month))
        .catch((err: Error) => log.warn({ err: err.message }, "books partitions not created yet"));
    }
    if (!legacyMoved) {
      // Request records from before migration 003, a few batches a pass; once all are moved, their
      // months are split out of the default partition. A failure here waits for the next pass
      // and never holds the export back.
      const opened = db;
      await moveLegacyRequestRecords(opened, { untilMs: Date.now() + settings.intervalMs / 2 })
        .then(async (legacy) => {
          if (legacy.moved > 0 || legacy.dropped) await splitDefaultPartitions(opened, now());
          legacyMoved = legacy.done;
        })
        .catch((err: Error) =>
          log.warn({ err: err.message }, "old request records not moved yet; retrying"),
        );
    }
    // A process that does not export (BOOKS_EXPORT=0) still writes its own calls' timings.
    const result = settings.exportEnabled
      ? await exportPass(
          store,
          db,
          settings,
          (ms) => {
            lagMs = ms;
            metrics.booksExportLag.set(ms / 1000);
          },
          now,
        )
      : { exported: 0, events: 0, lagMs: 0 };
    metrics.booksExported.inc(result.exported);
    await buffer.flush(db);
    // A quiet pass (nothing to export) asks the database nothing else, so a database gone while
    // no calls came in went unnoticed: /readyz and the status page said the books were fine while
    // usage answered 503. One trivial query says whether it still answers.
    if (result.exported === 0 && result.events === 0) await db.query("SELECT 1");
    lastSuccessAt = now();
    if (result.exported === 0 && result.events === 0 && result.lagMs === 0) lagMs = 0;
  };
  const onError = (err: unknown) => {
    const message = (err as Error)?.message ?? String(err);
    if (!lastError || now() - lastError.at > 30_000)
      log.warn({ err: message }, "books export failed; retrying");
    lastError = { message, at: now() };
  };
  const loop = every(settings.intervalMs, pass, onError);

  return {
    database: () => db,
    async ready(ms) {
      if (db) return db;
      await Promise.race([opening, new Promise((r) => setTimeout(r, ms).unref())]);
      if (!db) throw new BooksUnavailableError("the books database is not reachable");
      return db;
    },
    recordRequest: (record) => buffer.addRequest(record),
    recordPayment: (row) => buffer.addPayment(row),
    exportNow: () => pass(),
    health() {
      if (!db)
        return {
          state: "degraded",
          detail: lastError
            ? `the books database is not reachable: ${lastError.message}`
            : "the books database is starting",
        };
      if (lastError && lastError.at > lastSuccessAt)
        return { state: "degraded", detail: `books export failing: ${lastError.message}` };
      if (lagMs > settings.degradedAfterMs)
        return {
          state: "degraded",
          detail: `books export is ${Math.round(lagMs / 1000)} s behind`,
        };
      return { state: "operational", detail: null };
    },
    async stop() {
      stopped = true;
      await loop.stop();
      // A last flush of the request records, if the database answers.
      if (db) await buffer.flush(db).catch(() => undefined);
      await opening.catch(() => undefined);
      await db?.close().catch(() => undefined);
      db = null;
    },
  };
}
