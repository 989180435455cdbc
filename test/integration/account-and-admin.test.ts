import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ADMIN_KEY,
  admin,
  call,
  signUp,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";
import { redisKey } from "../../src/store/redis-context.js";
import type { RedisStore } from "../../src/store/redis.js";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(() => gw.stop());

describe("GET /api/v1/account and /api/v1/usage", () => {
  it("shows the caller's account with rate-limit headers", async () => {
    const { key, accountId } = await signUp(gw.url);
    const res = await call(`${gw.url}/api/v1/account`, { key });
    expect(res.body).toMatchObject({
      id: accountId,
      tier: "free",
      credits: 25,
      email_verified: false,
      rate_limit_per_minute: 60,
      features: ["tools", "x402"],
      features_coming: [],
    });
    expect(res.headers.get("ratelimit-limit")).toBe("60");
    expect(res.headers.get("ratelimit-remaining")).toBe("59");
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
  });

  it("pages through the ledger newest first", async () => {
    const { key, accountId } = await signUp(gw.url);
    for (let i = 1; i <= 3; i++)
      await admin(gw.url, `/accounts/${accountId}/credits`, {
        body: { amount: i, reason: `grant ${i}` },
      });
    const first = await call(`${gw.url}/api/v1/usage?limit=2`, { key });
    expect(first.body.data.map((e: { amount: number }) => e.amount)).toEqual([3, 2]);
    const second = await call(`${gw.url}/api/v1/usage?limit=2&cursor=${first.body.next_cursor}`, {
      key,
    });
    expect(
      second.body.data.map((e: { amount: number; reason: string }) => [e.amount, e.reason]),
    ).toEqual([
      [1, "grant 1"],
      [25, "sign-up grant"],
    ]);
    expect(second.body.next_cursor).toBeNull();
    for (const q of ["limit=0", "limit=101", "limit=abc", "page=2"]) {
      expect((await call(`${gw.url}/api/v1/usage?${q}`, { key })).body.error.code).toBe(
        "validation_failed",
      );
    }
  });
});

describe("admin API", () => {
  it("changes a tier, effective on the account's next request", async () => {
    const { key, accountId } = await signUp(gw.url);
    expect((await call(`${gw.url}/api/v1/account`, { key })).headers.get("ratelimit-limit")).toBe(
      "60",
    );
    const res = await admin(gw.url, `/accounts/${accountId}/tier`, {
      method: "PUT",
      body: { tier: "business" },
    });
    expect(res.body).toMatchObject({ id: accountId, tier: "business" });
    const after = await call(`${gw.url}/api/v1/account`, { key });
    expect(after.headers.get("ratelimit-limit")).toBe("1000");
    // Only what is built is listed as a feature; what the tier promises beyond that is "coming".
    expect(after.body.features).toEqual([
      "tools",
      "x402",
      "mcp",
      "webhooks",
      "priority_queue",
      "analytics",
      "facilitator",
      "custom_endpoints",
      "dedicated_workers",
      "sso",
    ]);
    expect(after.body.features_coming).toEqual([]);
  });

  it("grants credits once per Idempotency-Key, and refuses the key with another body", async () => {
    const { key, accountId } = await signUp(gw.url);
    const grant = (amount = 500) =>
      admin(gw.url, `/accounts/${accountId}/credits`, {
        body: { amount, reason: "support" },
        headers: { "idempotency-key": `grant-${accountId}` },
      });
    expect((await grant()).status).toBe(201);
    const again = await grant();
    expect([again.status, again.body.applied, again.body.account.credits]).toEqual([
      200,
      false,
      525,
    ]);
    expect((await call(`${gw.url}/api/v1/account`, { key })).body.credits).toBe(525);
    const other = await grant(5000);
    expect([other.status, other.body.error.code, other.body.error.param]).toEqual([
      409,
      "idempotency_conflict",
      "Idempotency-Key",
    ]);
    expect((await call(`${gw.url}/api/v1/account`, { key })).body.credits).toBe(525);
    // The grant's record is kept as long as its key's first body is (for good), not a day: a
    // retry the next week is still "already applied", never a second grant.
    const grantRecord = redisKey.operation(accountId, `admin-grant:grant-${accountId}`);
    expect(await (gw.services.store as RedisStore).redis.pttl(grantRecord)).toBe(-1);
  });

  it("grants under two Idempotency-Keys that share their first 128 characters, and refuses a bad key", async () => {
    const { key, accountId } = await signUp(gw.url);
    const stem = `grant-${accountId}-`.padEnd(128, "x");
    const grant = (idempotencyKey: string) =>
      admin(gw.url, `/accounts/${accountId}/credits`, {
        body: { amount: 100, reason: "support" },
        headers: { "idempotency-key": idempotencyKey },
      });
    expect((await grant(`${stem}-one`)).status).toBe(201);
    const second = await grant(`${stem}-two`);
    expect([second.status, second.body.applied, second.body.account.credits]).toEqual([
      201,
      true,
      225,
    ]);
    for (const bad of ["x".repeat(256), "has space"]) {
      const res = await grant(bad);
      expect([
        res.status,
        res.body.error.code,
        res.body.error.param,
        res.body.error.message,
      ]).toEqual([
        422,
        "validation_failed",
        "Idempotency-Key",
        "Idempotency-Key must be 1 to 255 printable ASCII characters.",
      ]);
    }
    expect((await grant("x".repeat(255))).status).toBe(201);
    expect((await call(`${gw.url}/api/v1/account`, { key })).body.credits).toBe(325);
  });

  it("lists accounts", async () => {
    const { accountId } = await signUp(gw.url);
    const ids: string[] = [];
    let cursor = "";
    do {
      const page = await admin(gw.url, `/accounts?limit=100${cursor ? `&cursor=${cursor}` : ""}`);
      ids.push(...page.body.data.map((a: { id: string }) => a.id));
      cursor = page.body.next_cursor ?? "";
    } while (cursor);
    expect(ids).toContain(accountId);
  });

  it("states a credit grant's real cap (1,000,000,000), even for an amount past 2^53", async () => {
    const { accountId } = await signUp(gw.url);
    for (const amount of ["1000000001", "9007199254740993"]) {
      const res = await call(`${gw.url}/api/v1/admin/accounts/${accountId}/credits`, {
        headers: { "x-api-key": ADMIN_KEY },
        rawBody: `{"amount":${amount},"reason":"x"}`,
      });
      expect([amount, res.status, res.body.error.code, res.body.error.param]).toEqual([
        amount,
        422,
        "validation_failed",
        "amount",
      ]);
      expect(res.body.error.message).toBe(
        'Invalid body field "amount": Too big: expected number to be <=1000000000.',
      );
    }
  });

  it("refuses bad input and unknown accounts, changing nothing", async () => {
    const { key, accountId } = await signUp(gw.url);
    const cases: [string, string, unknown, number, string][] = [
      ["PUT", `/accounts/${accountId}/tier`, { tier: "platinum" }, 422, "validation_failed"],
      [
        "POST",
        `/accounts/${accountId}/credits`,
        { amount: -5, reason: "x" },
        422,
        "validation_failed",
      ],
      [
        "POST",
        `/accounts/${accountId}/credits`,
        { amount: 1.5, reason: "x" },
        422,
        "validation_failed",
      ],
      ["POST", `/accounts/${accountId}/credits`, { amount: 5 }, 422, "validation_failed"],
      // Shown in the account's usage and its CSV export: an escape sequence would reach a terminal.
      [
        "POST",
        `/accounts/${accountId}/credits`,
        { amount: 5, reason: "a\u001b[31mred" },
        422,
        "validation_failed",
      ],
      ["PUT", `/accounts/acct_${"0".repeat(16)}/tier`, { tier: "pro" }, 404, "not_found"],
      ["POST", `/accounts/nonsense/credits`, { amount: 5, reason: "x" }, 404, "not_found"],
    ];
    for (const [method, path, body, status, code] of cases) {
      const res = await admin(gw.url, path, { method, body });
      expect([path, res.status, res.body.error.code]).toEqual([path, status, code]);
    }
    expect((await call(`${gw.url}/api/v1/account`, { key })).body).toMatchObject({
      tier: "free",
      credits: 25,
    });
  });

  it("is closed to customer keys and to no key", async () => {
    const { key, accountId } = await signUp(gw.url);
    const asCustomer = await call(`${gw.url}/api/v1/admin/accounts/${accountId}/credits`, {
      key,
      body: { amount: 1000, reason: "free money" },
    });
    expect([asCustomer.status, asCustomer.body.error.code]).toEqual([403, "admin_required"]);
    expect((await call(`${gw.url}/api/v1/admin/accounts`)).status).toBe(401);
    expect(
      (await call(`${gw.url}/api/v1/admin/accounts`, { key: `${ADMIN_KEY.slice(0, -1)}y` })).status,
    ).toBe(401);
    expect((await call(`${gw.url}/api/v1/account`, { key })).body.credits).toBe(25);
  });
});

describe("buying on a gateway without x402", () => {
  it("answers 501 payments_not_enabled and changes nothing", async () => {
    const { key } = await signUp(gw.url);
    const pack = await call(`${gw.url}/api/v1/credits/purchase`, { key, body: { pack: "1k" } });
    expect([pack.status, pack.body.error.code]).toEqual([501, "payments_not_enabled"]);
    const plan = await call(`${gw.url}/api/v1/plans/purchase`, { key, body: { plan: "starter" } });
    expect([plan.status, plan.body.error.code]).toEqual([501, "payments_not_enabled"]);
    expect((await call(`${gw.url}/api/v1/account`, { key })).body).toMatchObject({
      tier: "free",
      credits: 25,
    });
  });
});

describe("health and unknown routes", () => {
  it("answers /healthz and /readyz, and an unknown route with 404 in the one shape", async () => {
    expect((await call(`${gw.url}/healthz`)).body).toEqual({ status: "ok" });
    expect((await call(`${gw.url}/readyz`)).body).toEqual({ status: "ready" });
    const res = await call(`${gw.url}/api/v1/nothing-here`);
    expect(res.body.error).toMatchObject({
      code: "route_not_found",
      type: "invalid_request_error",
    });
  });

  it("is not ready, and answers 503 store_unavailable quickly, when Redis cannot be reached", async () => {
    // With its SECRET_KEY given, as in production (without one, a development gateway keeps its
    // key in the store, and with the store unreachable it refuses to start, saying so).
    const down = await startGateway({
      env: { REDIS_URL: "redis://127.0.0.1:1", SECRET_KEY: "s".repeat(40) },
    });
    try {
      expect((await call(`${down.url}/readyz`)).status).toBe(503);
      const started = Date.now();
      const res = await call(`${down.url}/api/v1/account`, {
        key: `tg_live_${"a".repeat(16)}_${"B".repeat(32)}`,
      });
      expect([res.status, res.body.error.code]).toEqual([503, "store_unavailable"]);
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      await down.stop();
    }
  });
});
