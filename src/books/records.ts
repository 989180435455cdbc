import { insertRows, type BooksDatabase } from "./database.js";
import { upsertRequestTimings, type RequestTiming } from "./requests.js";

/**
 * Request timings (status, outcome and latency of each finished tool call: the rest of its
 * request record comes from the ledger, see requests.ts) and settled payments, written to the
 * books off the hot path: each process keeps them in a bounded buffer and the exporter's pass
 * writes them in batches (keyed, so a retried batch is written once). A process that dies loses
 * what it had not yet flushed (at most one export interval), and while the database is down a
 * full buffer drops its oldest items (counted). The money — every credit change, payments
 * included — is the ledger, exported exactly once.
 */
export type RequestRecord = RequestTiming;

export interface PaymentRow {
  id: string;
  accountId: string;
  network: string;
  payer: string;
  valueAtomic: string;
  credits: number;
  type: string;
  plan: string | null;
  txHash: string | null;
  settledAt: number;
}

const ROWS_PER_INSERT = 500;

export class RecordBuffer {
  private requests: RequestRecord[] = [];
  private payments: PaymentRow[] = [];
  dropped = 0;

  constructor(private readonly capacity: number) {}

  addRequest(record: RequestRecord): void {
    this.requests.push(record);
    if (this.requests.length > this.capacity)
      this.dropped += this.requests.splice(
        0,
        this.requests.length - this.capacity,
      ).length;
  }

  addPayment(row: PaymentRow): void {
    this.payments.push(row);
    if (this.payments.length > this.capacity)
      this.dropped += this.payments.splice(
        0,
        this.payments.length - this.capacity,
      ).length;
  }

  get pending(): number {
    return this.requests.length + this.payments.length;
  }

  /** Writes what is buffered; what fails to be written stays for the next flush. */
  async flush(db: BooksDatabase): Promise<void> {
    await drainWith(this.requests, (batch) =>
      upsertRequestTimings(db.query, batch),
    );
    await drain(db, this.payments, "payments", "(id)", (p) => ({
      id: p.id,
      account_id: p.accountId,
      network: p.network,
      payer: p.payer,
      value_atomic: p.valueAtomic,
      credits: p.credits,
      type: p.type,
      plan: p.plan,
      tx_hash: p.txHash,
      settled_at: new Date(p.settledAt).toISOString(),
    }));
  }
}

/** Writes `pending` in batches, removing each batch once it is written. */
async function drainWith<T>(
  pending: T[],
  write: (batch: T[]) => Promise<unknown>,
): Promise<void> {
  while (pending.length > 0) {
    const batch = pending.slice(0, ROWS_PER_INSERT);
    await write(batch);
    pending.splice(0, batch.length);
  }
}

/** Inserts `pending` in batches (as rows of `table`), skipping rows already there. */
function drain<T>(
  db: BooksDatabase,
  pending: T[],
  table: string,
  conflict: string,
  row: (item: T) => Record<string, unknown>,
): Promise<void> {
  return drainWith(pending, (items) => {
    const batch = items.map(row);
    return insertRows(
      db.query,
      table,
      Object.keys(batch[0]!),
      batch.map(Object.values),
      conflict,
    );
  });
}
