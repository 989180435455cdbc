import { afterAll, beforeAll, expect, it } from "vitest";
import { checkBooks } from "../../src/books/check.js";
import {
  balanceOf,
  call,
  callTool,
  dashboardSession,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";
import {
  freshDatabase,
  sql,
  startPostgresCluster,
  type PostgresCluster,
} from "../helpers/postgres.js";

/**
 * PostgreSQL stopped for a while under load: the hot path never touches it, so calls are served
 * and charged all along; /readyz stays 200 and, like the status page, says the books export is
 * degraded; once PostgreSQL is back the exporter catches up — every entry in the books once, summing to the
 * balance — and the status page recovers.
 */
/** How long PostgreSQL stays down (the 30 s; CI runs this beside other test files). */
const OUTAGE_MS = 30_000;
let cluster: PostgresCluster;
let database: string;
let gw: TestGateway;
beforeAll(async () => {
  cluster = await startPostgresCluster();
  await cluster.booted;
  database = await freshDatabase(cluster.url);
  gw = await startGateway({
    env: {
      DATABASE_URL: database,
      BOOKS_EXPORT_INTERVAL_MS: "100",
      BOOKS_EXPORT_DEGRADED_AFTER_SECONDS: "1",
      STATUS_CHECK_INTERVAL_MS: "200",
    },
  });
});
afterAll(async () => {
  await gw?.stop();
  await cluster?.destroy();
});

const booksState = async () =>
  (
    (await call(`${gw.url}/status.json`)).body.components as {
      id: string;
      state: string;
      detail: string | null;
    }[]
  ).find((c) => c.id === "books-export");
async function until<T>(
  what: string,
  probe: () => Promise<T>,
  ok: (value: T) => boolean,
  ms = 20_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    // A probe that fails is not there yet either: on a loaded machine the gateway may not have made
    // the books' tables when the first look comes ("relation … does not exist").
    let seen: unknown;
    try {
      const value = await probe();
      if (ok(value)) return value;
      seen = value;
    } catch (err) {
      seen = (err as Error).message;
    }
    if (Date.now() > deadline)
      throw new Error(`${what}: still ${JSON.stringify(seen)} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const dashboardPage = async (path: string, cookie: string) => {
  const res = await fetch(`${gw.url}${path}`, { headers: { cookie, accept: "text/html" } });
  return { status: res.status, type: res.headers.get("content-type"), text: await res.text() };
};

it("serves and charges calls while PostgreSQL is down, then exports every entry once", async () => {
  const { key, accountId } = await fundedAccount(gw.url, 1000, "business");
  const calls = async (n: number) => {
    const statuses = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        callTool(gw.url, key, "hash", { text: `c${i}` }).then((r) => r.status),
      ),
    );
    expect(statuses).toEqual(Array(n).fill(200));
  };
  await calls(20);
  const cookie = await dashboardSession(gw.url, key);
  await until(
    "exported before the outage",
    () =>
      sql(database, "SELECT count(*)::int AS n FROM ledger_entries WHERE account_id = $1", [
        accountId,
      ]),
    (rows) => rows[0]!.n === 22,
  );

  await cluster.stop();
  try {
    // Under load for 30 s with PostgreSQL down: every call answered and charged. Ten calls
    // every 600 ms stay within the tier's 1,000 calls a minute.
    const outageStarted = Date.now();
    let made = 0;
    let readyDuringOutage: { status: number; body: unknown } | null = null;
    while (Date.now() - outageStarted < OUTAGE_MS) {
      const paced = new Promise((r) => setTimeout(r, 600));
      await calls(10);
      made += 10;
      if (!readyDuringOutage && Date.now() - outageStarted > 5000)
        readyDuringOutage = await call(`${gw.url}/readyz`);
      await paced;
    }
    process.stdout.write(
      `books outage test: ${made} calls served while PostgreSQL was down for ${((Date.now() - outageStarted) / 1000).toFixed(1)} s\n`,
    );
    expect(await balanceOf(gw.url, key)).toBe(1000 - 20 - made);
    expect(readyDuringOutage?.status).toBe(200);
    expect(readyDuringOutage?.body).toEqual({
      status: "ready",
      warnings: [expect.stringMatching(/^books export degraded: /)],
    });
    const degraded = await until("status page", booksState, (c) => c?.state === "degraded");
    expect(degraded!.detail).toMatch(/books export/);
    const usage = await call(`${gw.url}/api/v1/usage`, { key });
    expect([usage.status, usage.body.error?.code]).toEqual([503, "books_unavailable"]);
    // The dashboard's pages still open: the feed from the store's entries, analytics a notice.
    const overview = await dashboardPage("/dashboard", cookie);
    expect([overview.status, overview.type]).toEqual([200, "text/html; charset=utf-8"]);
    expect(overview.text).toContain('data-entry-id="');
    const analytics = await dashboardPage("/dashboard/analytics", cookie);
    expect([analytics.status, analytics.type]).toEqual([200, "text/html; charset=utf-8"]);
    expect(analytics.text).toContain('data-testid="analytics-unavailable"');
    expect(
      Number(
        (await call(`${gw.url}/metrics`)).body.match(
          /^toolgate_books_export_lag_seconds (\S+)$/m,
        )?.[1],
      ),
    ).toBeGreaterThan(1);

    await cluster.start();
    const total = 2 + 20 + made;
    await until(
      "caught up",
      () =>
        sql(
          database,
          "SELECT count(*)::int AS n, count(DISTINCT request_id)::int AS requests, sum(amount)::int AS sum FROM ledger_entries WHERE account_id = $1",
          [accountId],
        ),
      (rows) => rows[0]!.n === total,
    );
    const [books] = await sql<{ n: number; requests: number; sum: number }>(
      database,
      "SELECT count(*)::int AS n, count(DISTINCT request_id)::int AS requests, sum(amount)::int AS sum FROM ledger_entries WHERE account_id = $1",
      [accountId],
    );
    expect(books).toEqual({ n: total, requests: total, sum: 1000 - 20 - made });
    expect((await gw.services.store.ledger(accountId, { limit: 10 })).items).toEqual([]);
    expect(
      (await checkBooks(gw.services.store, await gw.services.books!.ready(1000))).mismatches,
    ).toEqual([]);
    await until("status page recovers", booksState, (c) => c?.state === "operational");
    expect((await call(`${gw.url}/readyz`)).body).toEqual({ status: "ready" });
    const page = await call(`${gw.url}/api/v1/usage?limit=100`, { key });
    expect(page.body.data.length).toBe(100);
  } finally {
    await cluster.start().catch(() => undefined);
  }
}, 180_000);

it("says the books are degraded when PostgreSQL goes while no calls come in, and recovers", async () => {
  await until("operational first", booksState, (c) => c?.state === "operational");
  await cluster.stop();
  try {
    // Nothing to export: only the pass's own check of the database can notice.
    const degraded = await until("status page", booksState, (c) => c?.state === "degraded");
    expect(degraded!.detail).toMatch(/books export failing/);
    expect((await call(`${gw.url}/readyz`)).body).toEqual({
      status: "ready",
      warnings: [expect.stringMatching(/^books export degraded: /)],
    });
  } finally {
    await cluster.start();
  }
  await until("status page recovers", booksState, (c) => c?.state === "operational");
  expect((await call(`${gw.url}/readyz`)).body).toEqual({ status: "ready" });
}, 120_000);
