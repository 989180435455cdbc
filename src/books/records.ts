import { insertRows, type BooksDatabase } from "./database.js";

/**
 * Request records (one per finished tool call) and settled payments, written to the books off
 * the hot path: each process keeps them in a bounded buffer and the exporter's pass inserts them
 * in batches (keyed, so a retried batch is written once). They are the books' analytics, not its
 * money: a process that dies loses what it had not yet flushed (at most one export interval), and
 * while the database is down a full buffer drops its oldest records (counted). The money — every
 * credit change, payments included — is the ledger, exported exactly once.
 */
export interface RequestRecord {
  accountId: string;
  requestId: string;
  at: number;
  tool: string;
  keyId: string | null;
  status: number;
  /** `ok`, or the error code the caller got. */
  outcome: string;
  latencyMs: number;
  /** Credits kept for the call (0 when refunded). */
  credits: number;
}

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
    await drain(db, this.requests, "request_records", "(account_id, request_id)", (r) => ({
      account_id: r.accountId,
      request_id: r.requestId,
      at: new Date(r.at).toISOString(),
      tool: r.tool,
      key_id: r.keyId,
      status: r.status,
      outcome: r.outcome,
      latency_ms: Math.round(r.latencyMs),
      credits: r.credits,
    }));
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

/** Inserts `pending` in batches (as rows of `table`), removing each batch once it is written. */
async function drain<T>(
  db: BooksDatabase,
  pending: T[],
  table: string,
  conflict: string,
  row: (item: T) => Record<string, unknown>,
): Promise<void> {
  while (pending.length > 0) {
    const batch = pending.slice(0, ROWS_PER_INSERT).map(row);
    await insertRows(db.query, table, Object.keys(batch[0]!), batch.map(Object.values), conflict);
    pending.splice(0, batch.length);
  }
}
