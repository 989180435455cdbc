import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BooksDatabase } from "../../src/books/database.js";
import { eventsPage, exportEvents } from "../../src/books/events.js";
import { shardOf } from "../../src/books/exporter.js";
import { monthStart, partitionName } from "../../src/books/partitions.js";
import { insertPayments } from "../../src/books/records.js";
import { eventRecord, parseEventRecord } from "../../src/events/types.js";
import { newAccountId, newEventId } from "../../src/lib/ids.js";
import {
  call,
  callTool,
  everyPage,
  fundedAccount,
  signUp,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";
import { freshDatabase } from "../helpers/postgres.js";

/**
 * Account events are in the books: every event the test's calls cause (agent.registered at
 * sign-up, credits.low and credits.depleted as the balance runs out) reaches the `events` table
 * exactly once, also when the relay logs an event again (a crash between logging and
 * acknowledging); GET /api/v1/events pages them from SQL with a keyset cursor and filters; a
 * `payment.received` event writes its payment row once. On PGlite (embedded) and on PostgreSQL.
 */
interface ListedEvent {
  id: string;
  event: string;
  timestamp: string;
  data: Record<string, unknown>;
}

describe.each([
  ["embedded: in-memory store with PGlite", "memory", () => Promise.resolve("pglite://memory")],
  ["Redis store with PostgreSQL", "redis", () => freshDatabase()],
] as const)("events in the books, %s", (_name, store, database) => {
  let gw: TestGateway;
  let db: BooksDatabase;
  let accountId: string;
  let key: string;

  beforeAll(async () => {
    gw = await startGateway({
      store,
      env: { DATABASE_URL: await database(), BOOKS_EXPORT_INTERVAL_MS: "100" },
    });
    db = await gw.services.books!.ready(30_000);
    // Sign-up's 25 credits, spent one call at a time: credits.low below 5, credits.depleted at 0.
    ({ accountId, key } = await fundedAccount(gw.url, 25, "business"));
    for (let i = 0; i < 25; i++)
      expect((await callTool(gw.url, key, "hash", { text: `${i}` })).status).toBe(200);
    expect((await callTool(gw.url, key, "hash", { text: "no credit" })).status).toBe(402);
  });
  afterAll(() => gw?.stop());

  const sqlEvents = () =>
    db.query<{ id: string; type: string; n: string | number }>(
      "SELECT id, type, count(*) OVER (PARTITION BY id) AS n FROM events WHERE account_id = $1 ORDER BY at, id",
      [accountId],
    );
  /** Until the relay has logged the account's three events and the export has moved them all. */
  const exported = async () => {
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
      await gw.services.books!.exportNow();
      const held = await gw.services.store.listEvents(accountId, 100);
      if (held.length === 0 && (await sqlEvents()).length >= 3) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error("the events were not exported in 30 s");
  };
  const listAll = (query: string) =>
    everyPage<ListedEvent>(`${gw.url}/api/v1/events?limit=1${query}`, key);

  it("puts every event the calls caused in SQL once, and lists them newest first by cursor", async () => {
    await exported();
    const rows = await sqlEvents();
    expect(rows.map((r) => [r.type, Number(r.n)])).toEqual([
      ["agent.registered", 1],
      ["credits.low", 1],
      ["credits.depleted", 1],
    ]);
    const listed = await listAll("");
    expect(listed.map((e) => e.id)).toEqual(rows.map((r) => r.id).reverse());
    expect(listed.map((e) => e.event)).toEqual([
      "credits.depleted",
      "credits.low",
      "agent.registered",
    ]);
    expect(listed[1]!.data).toMatchObject({ credits_remaining: 4, threshold: 5 });
    // Each in its month's partition, made ahead of time (not the default one).
    const [where] = await db.query<{ partition: string }>(
      "SELECT DISTINCT tableoid::regclass::text AS partition FROM events WHERE account_id = $1",
      [accountId],
    );
    expect(where!.partition).toBe(
      partitionName("events", monthStart(Date.parse(listed[0]!.timestamp))),
    );

    // Filters: by type, and by time.
    expect((await listAll("&type=credits.low")).map((e) => e.id)).toEqual([listed[1]!.id]);
    const from = encodeURIComponent(listed[1]!.timestamp);
    expect((await listAll(`&from=${from}`)).map((e) => e.event)).toEqual(
      listed.filter((e) => e.timestamp >= listed[1]!.timestamp).map((e) => e.event),
    );
    expect(
      (await call(`${gw.url}/api/v1/events?cursor=not-a-cursor`, { key })).body.error.code,
    ).toBe("invalid_cursor");
    // `from` and `to` swapped: a 400 saying so, not an empty list.
    const swapped = await call(
      `${gw.url}/api/v1/events?from=${from}&to=${encodeURIComponent(listed.at(-1)!.timestamp)}`,
      { key },
    );
    expect([swapped.status, swapped.body.error?.code, swapped.body.error?.param]).toEqual([
      400,
      "invalid_range",
      "from",
    ]);
  });

  it("exports an event the relay logs again (a crash before its acknowledgement) nothing twice", async () => {
    await exported();
    const listed = (await call(`${gw.url}/api/v1/events`, { key })).body.data as ListedEvent[];
    const again = listed.map((e) => parseEventRecord({ ...e, account_id: accountId }));
    await gw.services.store.logEvents(accountId, again, null);
    // Listed once while they are both in the store and in the books.
    expect((await call(`${gw.url}/api/v1/events`, { key })).body.data).toEqual(listed);
    await exported();
    expect((await sqlEvents()).map((r) => Number(r.n))).toEqual([1, 1, 1]);
    expect(await gw.services.store.listEvents(accountId, 100)).toEqual([]);
  });

  it("lists the events the exporter moves while a listing reads them: each is in the log or the books when read", async () => {
    const store = gw.services.store;
    const account = await signUp(gw.url);
    // Held, the exporter's lease keeps the background export off this account until the listing runs.
    const lease = `books-export:${shardOf(account.accountId, gw.services.config.books!.shards)}`;
    let token: string | null = null;
    while (!(token = await store.acquireLock(lease, 30_000)))
      await new Promise((r) => setTimeout(r, 20));
    const low = Array.from({ length: 3 }, (_, i) =>
      eventRecord(newEventId(), "credits.low", account.accountId, {
        credits_remaining: i,
        tool_name: null,
        threshold: 5,
      }),
    );
    await store.logEvents(account.accountId, low, null);
    // The exporter moves them just as the store's log is read (a slow answer from the store).
    const reading = new Proxy(store, {
      get(target, name, receiver) {
        if (name !== "listEvents") return Reflect.get(target, name, receiver);
        return async (id: string, limit: number) => {
          if (token) {
            await store.releaseLock(lease, token);
            token = null;
            for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
              await gw.services.books!.exportNow();
              const held = await target.listEvents(id, 100);
              if (!held.some((e) => e.event === "credits.low")) break;
              await new Promise((r) => setTimeout(r, 50));
            }
          }
          return target.listEvents(id, limit);
        };
      },
    });
    try {
      const page = await eventsPage(
        reading,
        db,
        account.accountId,
        { type: "credits.low" },
        { limit: 10 },
      );
      expect(page.items.map((e) => e.id).sort()).toEqual(low.map((e) => e.id).sort());
    } finally {
      if (token) await store.releaseLock(lease, token);
    }
  });

  it("another account sees none of them", async () => {
    const other = await fundedAccount(gw.url, 25, "business");
    const res = await call(`${gw.url}/api/v1/events?limit=100`, { key: other.key });
    expect(res.body.data.map((e: ListedEvent) => e.event)).toEqual(
      res.body.data.length ? ["agent.registered"] : [],
    );
    expect(JSON.stringify(res.body)).not.toContain(accountId);
  });

  it("writes a payment.received event's payment once, whichever writer comes first", async () => {
    const account = newAccountId();
    const payer = `0x${"ab".repeat(20)}`;
    const paymentId = `84532:0x${"cd".repeat(20)}:${payer}:0x${"0e".repeat(32)}`;
    const settled = new Date();
    const event = eventRecord(
      newEventId(),
      "payment.received",
      account,
      {
        type: "one_time",
        credits_added: 500,
        amount_usd: "1.00",
        plan: null,
        agent_id: account,
        payment_session_id: paymentId,
        amount_usdc_atomic: "1000000",
        network: "base-sepolia",
        transaction: `0x${"12".repeat(32)}`,
      },
      settled,
    );
    // The crediting process's buffered row (its own clock), then the event, exported twice.
    await db.transaction((query) =>
      insertPayments(query, [
        {
          id: paymentId,
          accountId: account,
          network: "base-sepolia",
          payer,
          valueAtomic: "1000000",
          credits: 500,
          type: "one_time",
          plan: null,
          txHash: `0x${"12".repeat(32)}`,
          settledAt: settled.getTime() + 40,
        },
      ]),
    );
    expect(await exportEvents(db, [event])).toBe(1);
    expect(await exportEvents(db, [event])).toBe(0);
    const rows = await db.query<{ id: string; payer: string; credits: string | number }>(
      "SELECT id, payer, credits FROM payments WHERE account_id = $1",
      [account],
    );
    expect(rows.map((r) => [r.id, r.payer, Number(r.credits)])).toEqual([[paymentId, payer, 500]]);

    // Without the buffered row (the process died before flushing it), the event writes it.
    const lost = newAccountId();
    const lostId = paymentId.replace(/0e/g, "0f");
    const lostEvent = eventRecord(newEventId(), "payment.received", lost, {
      ...(event.data as Parameters<typeof eventRecord<"payment.received">>[3]),
      agent_id: lost,
      payment_session_id: lostId,
    });
    expect(await exportEvents(db, [lostEvent, lostEvent])).toBe(1);
    expect(
      await db.query("SELECT id, value_atomic::text AS value FROM payments WHERE account_id = $1", [
        lost,
      ]),
    ).toEqual([{ id: lostId, value: "1000000" }]);
  });
});
