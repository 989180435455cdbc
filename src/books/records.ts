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
    while (this.requests.length > 0) {
      const batch = this.requests.slice(0, ROWS_PER_INSERT);
      await insertRows(
        db.query,
        "request_records",
        [
          "account_id",
          "request_id",
          "at",
          "tool",
          "key_id",
          "status",
          "outcome",
          "latency_ms",
          "credits",
        ],
        batch.map((r) => [
          r.accountId,
          r.requestId,
          new Date(r.at).toISOString(),
          r.tool,
          r.keyId,
          r.status,
          r.outcome,
          Math.round(r.latencyMs),
          r.credits,
        ]),
        "(account_id, request_id)",
      );
      this.requests.splice(0, batch.length);
    }
    while (this.payments.length > 0) {
      const batch = this.payments.slice(0, ROWS_PER_INSERT);
      await insertRows(
        db.query,
        "payments",
        [
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
        ],
        batch.map((p) => [
          p.id,
          p.accountId,
          p.network,
          p.payer,
          p.valueAtomic,
          p.credits,
          p.type,
          p.plan,
          p.txHash,
          new Date(p.settledAt).toISOString(),
        ]),
        "(id)",
      );
      this.payments.splice(0, batch.length);
    }
  }
}
