import Papa from "papaparse";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  callTool,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";
import { freshDatabase } from "../helpers/postgres.js";

/**
 * GET /api/v1/analytics answers from the books' request records in SQL: what it says per bucket
 * and group (calls, credits, errors, p50/p95 latency) equals what this test computes from the
 * calls it made — their statuses and the credits they were charged, as the caller saw them, and
 * the latencies the gateway recorded for them (each no longer than the call took as the test
 * measured it) — on PGlite and on a real PostgreSQL. Another account's calls never show.
 */
interface MadeCall {
  requestId: string;
  tool: string;
  keyId: string;
  status: number;
  charged: number;
  tookMs: number;
}

interface Row {
  bucket: string;
  group: string | null;
  calls: number;
  credits: number;
  errors: number;
  latency_p50_ms: number | null;
  latency_p95_ms: number | null;
}

/** PostgreSQL's percentile_cont: linear interpolation at fraction `p` of the sorted values. */
function percentileCont(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const at = p * (sorted.length - 1);
  const low = Math.floor(at);
  const high = Math.ceil(at);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (at - low);
}

/**
 * The answer's rows against the expected ones: every figure equal, the latency percentiles within
 * half the 0.1 ms the answer is rounded to (compared with the exact percentile, unrounded here:
 * a binary float cannot round a …5 the way PostgreSQL rounds its exact numeric).
 */
function expectRows(actual: Row[], expected: Row[]) {
  const latencies = ["latency_p50_ms", "latency_p95_ms"] as const;
  const without = (rows: Row[]) =>
    rows.map((r) => ({ ...r, latency_p50_ms: undefined, latency_p95_ms: undefined }));
  expect(without(actual)).toEqual(without(expected));
  actual.forEach((row, i) => {
    for (const field of latencies) {
      const want = expected[i]![field];
      if (want === null) expect(row[field]).toBeNull();
      else expect(Math.abs(row[field]! - want)).toBeLessThanOrEqual(0.05 + 1e-9);
    }
  });
}

describe.each([
  ["embedded: in-memory store with PGlite", "memory", () => Promise.resolve("pglite://memory")],
  ["Redis store with PostgreSQL", "redis", () => freshDatabase()],
] as const)("analytics from the books, %s", (_name, store, database) => {
  let gw: TestGateway;
  let pro: { accountId: string; key: string; keyId: string };
  let second: { id: string; key: string };
  const made: MadeCall[] = [];
  let started = "";

  async function tool(key: string, keyId: string, name: string, body: unknown) {
    const t0 = performance.now();
    const res = await callTool(gw.url, key, name, body);
    made.push({
      requestId: res.headers.get("x-request-id")!,
      tool: name,
      keyId,
      status: res.status,
      charged: res.status === 200 ? Number(res.headers.get("x-credits-charged")) : 0,
      tookMs: performance.now() - t0,
    });
  }

  beforeAll(async () => {
    gw = await startGateway({
      store,
      env: { DATABASE_URL: await database(), BOOKS_EXPORT_INTERVAL_MS: "100" },
    });
    started = new Date(Date.now() - 1000).toISOString();
    pro = await fundedAccount(gw.url, 500, "pro");
    const made2 = await call(`${gw.url}/api/v1/keys`, { key: pro.key, body: { name: "second" } });
    second = { id: made2.body.id, key: made2.body.key };
    for (let i = 0; i < 7; i++) await tool(pro.key, pro.keyId, "hash", { text: `a${i}` });
    for (let i = 0; i < 4; i++)
      await tool(second.key, second.id, "text-diff", { old: `x${i}`, new: "y" });
    // Refused by the worker (an invalid pattern): an error, refunded.
    for (let i = 0; i < 3; i++)
      await tool(pro.key, pro.keyId, "regex-test", { pattern: "(", text: `${i}` });
    // Another Pro account's calls: never in this account's answers.
    const other = await fundedAccount(gw.url, 100, "pro");
    for (let i = 0; i < 5; i++) await callTool(gw.url, other.key, "hash", { text: `o${i}` });
    await recorded();
  });
  afterAll(() => gw?.stop());

  /** Waits until every call the test made has its request record, timing included. */
  async function recorded() {
    const db = await gw.services.books!.ready(5000);
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
      await gw.services.books!.exportNow();
      const [row] = await db.query<{ n: string | number }>(
        "SELECT count(*) AS n FROM request_records WHERE account_id = $1 AND latency_ms IS NOT NULL AND (charged > 0 OR status <> 200)",
        [pro.accountId],
      );
      if (Number(row!.n) === made.length) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error("the request records did not reach the books");
  }

  /** What the answer must be, from the calls made and the latency and time the books recorded for each. */
  async function expectedRows(
    granularity: "hour" | "day",
    groupOf: (c: MadeCall) => string | null,
  ) {
    const db = await gw.services.books!.ready(1000);
    const stored = await db.query<{
      request_id: string;
      at_ms: string | number;
      latency_ms: number;
    }>(
      "SELECT request_id, (extract(epoch FROM at) * 1000)::bigint AS at_ms, latency_ms FROM request_records WHERE account_id = $1",
      [pro.accountId],
    );
    expect(stored.map((r) => r.request_id).sort()).toEqual(made.map((c) => c.requestId).sort());
    const byId = new Map(stored.map((r) => [r.request_id, r]));
    const unit = granularity === "hour" ? 3_600_000 : 86_400_000;
    const rows = new Map<string, { row: Row; latencies: number[] }>();
    for (const c of made) {
      const record = byId.get(c.requestId)!;
      // The gateway's latency is the part of the call the test measured that it spent on it.
      expect(record.latency_ms).toBeLessThanOrEqual(Math.ceil(c.tookMs) + 1);
      const bucket = new Date(Math.floor(Number(record.at_ms) / unit) * unit).toISOString();
      const group = groupOf(c);
      const id = `${bucket} ${group}`;
      const entry = rows.get(id) ?? {
        row: {
          bucket,
          group,
          calls: 0,
          credits: 0,
          errors: 0,
          latency_p50_ms: null,
          latency_p95_ms: null,
        },
        latencies: [],
      };
      entry.row.calls++;
      entry.row.credits += c.charged;
      if (c.status >= 400) entry.row.errors++;
      entry.latencies.push(Number(record.latency_ms));
      rows.set(id, entry);
    }
    return [...rows.values()]
      .map(({ row, latencies }) => ({
        ...row,
        latency_p50_ms: percentileCont(latencies, 0.5),
        latency_p95_ms: percentileCont(latencies, 0.95),
      }))
      .sort((a, b) =>
        a.bucket === b.bucket
          ? String(a.group) < String(b.group)
            ? -1
            : 1
          : a.bucket < b.bucket
            ? -1
            : 1,
      );
  }

  const analytics = (query: string, key = pro.key) =>
    call(`${gw.url}/api/v1/analytics?${query}`, { key });
  const range = () => `from=${started}&to=${new Date(Date.now() + 1000).toISOString()}`;

  it("answers calls, credits, errors and latency percentiles per hour, equal to the calls made", async () => {
    const res = await analytics(`${range()}&granularity=hour`);
    expect(res.status).toBe(200);
    expectRows(res.body.data, await expectedRows("hour", () => null));
    expect(res.body.totals).toMatchObject({
      calls: made.length,
      credits: made.reduce((n, c) => n + c.charged, 0),
      errors: 3,
    });
    expect(res.body.totals.credits).toBe(11);
  });

  it.each([
    ["tool", (c: MadeCall) => c.tool],
    ["key", (c: MadeCall) => c.keyId],
    ["status", (c: MadeCall) => String(c.status)],
  ] as const)("splits each day by %s", async (groupBy, groupOf) => {
    const res = await analytics(`${range()}&granularity=day&group_by=${groupBy}`);
    expect(res.status).toBe(200);
    expectRows(res.body.data, await expectedRows("day", groupOf));
  });

  it("exports the same rows as CSV", async () => {
    const json = await analytics(`${range()}&group_by=tool`);
    const csv = await analytics(`${range()}&group_by=tool&format=csv`);
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-type")).toMatch(/^text\/csv/);
    expect(csv.headers.get("content-disposition")).toBe('attachment; filename="analytics.csv"');
    const parsed = Papa.parse<Record<string, string>>(csv.body as string, {
      header: true,
      skipEmptyLines: true,
    });
    expect(parsed.meta.fields).toEqual([
      "bucket",
      "group",
      "calls",
      "credits",
      "errors",
      "latency_p50_ms",
      "latency_p95_ms",
    ]);
    expect(parsed.data).toEqual(
      json.body.data.map((row: Row) =>
        Object.fromEntries(Object.entries(row).map(([k, v]) => [k, v === null ? "" : String(v)])),
      ),
    );
  });

  it("is a Pro feature: Free and Starter accounts are refused with 403 feature_not_in_tier", async () => {
    for (const tier of ["free", "starter"]) {
      const account = await fundedAccount(gw.url, 25, tier);
      const res = await analytics(range(), account.key);
      expect([res.status, res.body.error.code, res.body.error.required_tier]).toEqual([
        403,
        "feature_not_in_tier",
        "pro",
      ]);
    }
  });

  it("shows an account only its own calls", async () => {
    const other = await fundedAccount(gw.url, 25, "business");
    const res = await analytics(range(), other.key);
    expect([res.status, res.body.data, res.body.totals.calls]).toEqual([200, [], 0]);
  });

  it("refuses a range that ends before it starts, or is too long for its granularity, with 400 invalid_range", async () => {
    const cases = [
      ["from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", "from"],
      ["from=2026-01-01T00:00:00Z&to=2026-01-01T00:00:00Z", "from"],
      ["from=2026-01-01T00:00:00Z&to=2026-01-08T00:00:01Z&granularity=hour", "to"],
      ["from=2025-01-01T00:00:00Z&to=2026-01-03T00:00:00Z&granularity=day", "to"],
    ];
    for (const [query, param] of cases) {
      const res = await analytics(query!);
      expect([res.status, res.body.error.code, res.body.error.param]).toEqual([
        400,
        "invalid_range",
        param,
      ]);
    }
    // Seven days hourly and 366 days daily are the longest ranges accepted.
    expect((await analytics("from=2026-01-01T00:00:00Z&to=2026-01-08T00:00:00Z")).status).toBe(200);
    // A date alone is its start, 00:00 UTC (ISO 8601 has dates too): the same range as above.
    const byDates = await analytics("from=2026-01-01&to=2026-01-08");
    expect([byDates.status, byDates.body.from, byDates.body.to]).toEqual([
      200,
      "2026-01-01T00:00:00.000Z",
      "2026-01-08T00:00:00.000Z",
    ]);
    const notATime = await analytics("from=yesterday");
    expect([notATime.status, notATime.body.error.param, notATime.body.error.message]).toEqual([
      422,
      "from",
      expect.stringContaining("or a date (2026-11-27)"),
    ]);
    const res = await analytics("granularity=week");
    expect([res.status, res.body.error.code, res.body.error.param]).toEqual([
      422,
      "validation_failed",
      "granularity",
    ]);
  });
});
