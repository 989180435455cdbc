import { EVENT_DATA, parseEventRecord, type EventRecord, type EventType } from "../events/types.js";
import { InvalidCursorError, type Page, type Store } from "../store/types.js";
import { insertRows, type BooksDatabase } from "./database.js";
import { insertPayments, type PaymentRow } from "./records.js";
import { LATEST_ISO_INSTANT } from "../lib/iso-years.js";

/**
 * Account events in the books. The webhook relay logs each event it hands on in the store's event
 * log; the exporter moves that log to the `events` table (migration 004) exactly once — inserted
 * keyed by (account, the event's own timestamp, its id) with ON CONFLICT DO NOTHING and committed
 * before the log forgets them — and the events API reads the table merged with what the log
 * still holds (not yet exported), each event once. Without the books, the log (its last 1,000
 * events) is all there is.
 */
export interface EventFilter {
  type?: EventType;
  /** Epoch ms, inclusive. */
  from?: number;
  /** Epoch ms, exclusive. */
  to?: number;
}

type Query = BooksDatabase["query"];

const COLUMNS = ["account_id", "at", "id", "type", "data"] as const;

/** Inserts events (of any accounts); returns how many were new. */
export function insertEvents(query: Query, events: EventRecord[]): Promise<number> {
  return insertRows(
    query,
    "events",
    COLUMNS,
    events.map((e) => [e.account_id, e.timestamp, e.id, e.event, JSON.stringify(e.data)]),
    "(account_id, at, id)",
  );
}

/**
 * Inserts events and the payments their `payment.received` events describe, in one transaction:
 * a payment's row is thus written exactly once with its event, even if the process that credited
 * it died before its buffered row was flushed (records.ts; whichever comes first claims the id).
 */
export function exportEvents(db: BooksDatabase, events: EventRecord[]): Promise<number> {
  return db.transaction(async (query) => {
    const inserted = await insertEvents(query, events);
    await insertPayments(
      query,
      events.map(paymentOf).filter((p) => p !== null),
    );
    return inserted;
  });
}

/** An x402 payment id: `<chain id>:<token>:<payer>:<authorization nonce>` (src/payments/payments.ts). */
const PAYMENT_ID = /^\d+:0x[0-9a-f]{40}:(0x[0-9a-f]{40}):0x[0-9a-f]{64}$/;

/** The payments row a `payment.received` event describes; null for other events, or one without the facts a row needs. */
export function paymentOf(event: EventRecord): PaymentRow | null {
  if (event.event !== "payment.received") return null;
  const data = EVENT_DATA["payment.received"].parse(event.data);
  const payer = PAYMENT_ID.exec(data.payment_session_id)?.[1];
  if (!payer || !data.network || !data.amount_usdc_atomic) return null;
  return {
    id: data.payment_session_id,
    accountId: event.account_id,
    network: data.network,
    payer,
    valueAtomic: data.amount_usdc_atomic,
    credits: data.credits_added,
    type: data.type,
    plan: data.plan,
    txHash: data.transaction ?? null,
    settledAt: Date.parse(event.timestamp),
  };
}

/**
 * Keyset position of an event in the newest-first order (time, then id): `<epoch ms>-<event id>`.
 * Events share a millisecond, so the id breaks ties.
 */
const CURSOR = /^(\d{1,15})-(evt_[0-9a-z]{1,40})$/;
interface Position {
  ms: number;
  id: string;
}
export const cursorOf = (e: EventRecord) => `${Date.parse(e.timestamp)}-${e.id}`;
function parseCursor(cursor: string): Position {
  const match = CURSOR.exec(cursor);
  if (!match) throw new InvalidCursorError(`not an events cursor: ${cursor}`);
  // A time past year 9999 is a position after every event (as a usage cursor's is): PostgreSQL
  // refused the ISO text of one (+010000-…), a 500.
  return { ms: Math.min(Number(match[1]), LATEST_ISO_INSTANT), id: match[2]! };
}
const positionOf = (e: EventRecord): Position => ({
  ms: Date.parse(e.timestamp),
  id: e.id,
});
/** Newest first: later time, then the greater id. */
const newerFirst = (a: EventRecord, b: EventRecord) => {
  const [pa, pb] = [positionOf(a), positionOf(b)];
  return pa.ms !== pb.ms ? pb.ms - pa.ms : pa.id === pb.id ? 0 : pa.id < pb.id ? 1 : -1;
};
const before = (e: EventRecord, cursor: Position) => {
  const p = positionOf(e);
  return p.ms < cursor.ms || (p.ms === cursor.ms && p.id < cursor.id);
};

function matches(e: EventRecord, filter: EventFilter): boolean {
  const at = Date.parse(e.timestamp);
  return (
    (filter.type === undefined || e.event === filter.type) &&
    (filter.from === undefined || at >= filter.from) &&
    (filter.to === undefined || at < filter.to)
  );
}

/** How many of the store's logged events are read: with the books on, the not-yet-exported ones (seconds' worth). */
const LOG_READ = 10_000;

export async function eventsPage(
  store: Store,
  db: BooksDatabase | null,
  accountId: string,
  filter: EventFilter,
  page: { cursor?: string; limit: number },
): Promise<Page<EventRecord>> {
  const cursor = page.cursor === undefined ? undefined : parseCursor(page.cursor);
  const wanted = page.limit + 1;
  // The log first, the books after, as the usage API reads (books/usage.ts): an event the log
  // no longer held when read was committed to the books before it was forgotten.
  const logged = await store.listEvents(accountId, LOG_READ);
  const fromBooks = db ? await booksMatches(db.query, accountId, filter, cursor, wanted) : [];
  const fromStore = logged.filter((e) => matches(e, filter) && (!cursor || before(e, cursor)));
  const seen = new Set<string>();
  const merged = [...fromStore, ...fromBooks]
    .filter((e) => !seen.has(e.id) && seen.add(e.id))
    .sort(newerFirst)
    .slice(0, wanted);
  const items = merged.slice(0, page.limit);
  return {
    items,
    nextCursor: merged.length > page.limit ? cursorOf(items.at(-1)!) : null,
  };
}

interface EventRow {
  id: string;
  type: string;
  at_ms: string | number;
  account_id: string;
  data: unknown;
}

async function booksMatches(
  query: Query,
  accountId: string,
  filter: EventFilter,
  cursor: Position | undefined,
  wanted: number,
): Promise<EventRecord[]> {
  const params: unknown[] = [accountId];
  const where = ["account_id = $1"];
  const param = (value: unknown) => `$${params.push(value)}`;
  if (cursor)
    where.push(
      `(at, id) < (${param(new Date(cursor.ms).toISOString())}::timestamptz, ${param(cursor.id)})`,
    );
  if (filter.type !== undefined) where.push(`type = ${param(filter.type)}`);
  if (filter.from !== undefined) where.push(`at >= ${param(new Date(filter.from).toISOString())}`);
  if (filter.to !== undefined) where.push(`at < ${param(new Date(filter.to).toISOString())}`);
  const rows = await query<EventRow>(
    `SELECT id, type, (extract(epoch FROM at) * 1000)::bigint AS at_ms, account_id, data
       FROM events WHERE ${where.join(" AND ")} ORDER BY at DESC, id DESC LIMIT ${wanted}`,
    params,
  );
  return rows.map((row) =>
    parseEventRecord({
      id: row.id,
      event: row.type,
      timestamp: new Date(Number(row.at_ms)).toISOString(),
      account_id: row.account_id,
      data: typeof row.data === "string" ? JSON.parse(row.data) : row.data,
    }),
  );
}
