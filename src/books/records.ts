import { insertRows, type BooksDatabase } from "./database.js";
import { upsertRequestTimings, type RequestTiming } from "./requests.js";

/**
 * Request timings (status, outcome and latency of each finished tool call: the rest of its
 * request record comes from the ledger, see requests.ts) and settled payments, written to the
 * books off the hot path: each process keeps them in a bounded buffer and the exporter's pass
 * writes them in batches (keyed, so a retried batch is written once). A process that dies loses
 * what it had not yet flushed (at most one export interval), and while the database is down a
 * full buffer drops its oldest items (counted). The money — every credit change, payments
 * included — is the ledger, exported exactly once; and a payment's row is also written from its
 * `payment.received` event, exported exactly once (events.ts), whichever comes first.
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
      this.dropped += this.requests.splice(0, this.requests.length - this.capacity).length;
  }

  addPayment(row: PaymentRow): void {
    this.payments.push(row);
    if (this.payments.length > this.capacity)
      this.dropped += this.payments.splice(0, this.payments.length - this.capacity).length;
  }

  get pending(): number {
    return this.requests.length + this.payments.length;
  }

  /** Writes what is buffered; what fails to be written stays for the next flush. */
  async flush(db: BooksDatabase): Promise<void> {
    await drainWith(this.requests, (batch) => upsertRequestTimings(db.query, batch));
    await drainWith(this.payments, (batch) =>
      db.transaction((query) => insertPayments(query, batch)),
    );
  }
}

const PAYMENT_COLUMNS = [
  "id",
  "account_id",
  "network",
  "payer",
  "value_atomic",
  "credits",
  "type",
  "plan",
  "tx_hash",
  "settled_at",
] as const;

/**
 * Inserts payments once per payment id (run in a transaction): the id is claimed in `payment_ids`
 * first (the unpartitioned table that keeps ids unique, migration 004), and only the ids new
 * there get their row in the partitioned `payments`. Returns how many were new.
 */
export async function insertPayments(
  query: BooksDatabase["query"],
  payments: PaymentRow[],
): Promise<number> {
  const settledAt = (p: PaymentRow) => new Date(p.settledAt).toISOString();
  const unique = [...new Map(payments.map((p) => [p.id, p])).values()];
  if (unique.length === 0) return 0;
  const params: unknown[] = [];
  const values = unique.map(
    (p) => `($${params.push(p.id)}, $${params.push(settledAt(p))}::timestamptz)`,
  );
  const claimed = new Set(
    (
      await query<{ id: string }>(
        `INSERT INTO payment_ids (id, settled_at) VALUES ${values.join(", ")} ON CONFLICT (id) DO NOTHING RETURNING id`,
        params,
      )
    ).map((row) => row.id),
  );
  const fresh = unique.filter((p) => claimed.has(p.id));
  await insertRows(
    query,
    "payments",
    PAYMENT_COLUMNS,
    fresh.map((p) => [
      p.id,
      p.accountId,
      p.network,
      p.payer,
      p.valueAtomic,
      p.credits,
      p.type,
      p.plan,
      p.txHash,
      settledAt(p),
    ]),
    "(id, settled_at)",
  );
  return fresh.length;
}

/** Writes `pending` in batches, removing each batch once it is written. */
async function drainWith<T>(pending: T[], write: (batch: T[]) => Promise<unknown>): Promise<void> {
  while (pending.length > 0) {
    const batch = pending.slice(0, ROWS_PER_INSERT);
    await write(batch);
    pending.splice(0, batch.length);
  }
}
