import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRedisStore } from "../../src/store/redis.js";
import { tierLimits } from "../../src/store/index.js";
import { PERIOD_MS } from "../../src/accounts/tiers.js";
import { startFakeLlm } from "../helpers/fake-providers.js";
import { REDIS_URL } from "../helpers/redis.js";
import { ledgerOf } from "../helpers/books.js";
import {
  admin,
  call,
  callTool,
  dropPrefix,
  eventsOf,
  signUp,
  spawnGateway,
  spawnGatewayPair,
  uniquePrefix,
  type GatewayProcess,
} from "../helpers/gateway.js";

/** Two real gateway processes sharing one Redis: no state may live in a process. */
const prefix = uniquePrefix("multi");
let a: GatewayProcess;
let b: GatewayProcess;
beforeAll(async () => {
  [a, b] = await spawnGatewayPair(prefix);
});
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await dropPrefix(prefix);
});

const me = (gw: GatewayProcess, key: string) => call(`${gw.url}/api/v1/account`, { key });

describe("keys across processes", () => {
  it("a key revoked through one process fails on the next request on both", async () => {
    const { key, keyId } = await signUp(a.url);
    expect((await me(a, key)).status).toBe(200);
    expect((await me(b, key)).status).toBe(200);
    expect(
      (await call(`${b.url}/api/v1/keys/${keyId}?force=true`, { key, method: "DELETE" })).status,
    ).toBe(200);
    expect((await me(a, key)).body.error.code).toBe("api_key_revoked");
    expect((await me(b, key)).body.error.code).toBe("api_key_revoked");
  });

  it("a rotated-out key fails on the next request on both; its successor works on both", async () => {
    const { key, keyId } = await signUp(b.url);
    const rotated = await call(`${a.url}/api/v1/keys/${keyId}/rotate`, {
      key,
      body: { grace_seconds: 0 },
    });
    expect(rotated.status).toBe(201);
    for (const gw of [a, b]) {
      expect((await me(gw, key)).body.error.code).toBe("api_key_revoked");
      expect((await me(gw, rotated.body.key)).status).toBe(200);
    }
  });
});

describe("rate limits across processes", () => {
  // Free tier: 60 requests per minute. Requests alternate between the two processes.
  it.each([
    [0.9, 54, 0],
    [1, 60, 0],
    [2, 60, 60],
  ])(
    "at %sx the limit: %i answered, %i refused with 429",
    async (_factor, expectedOk, expectedLimited) => {
      const { key } = await signUp(a.url);
      const total = expectedOk + expectedLimited;
      const results = await Promise.all(
        Array.from({ length: total }, (_, i) => me(i % 2 ? a : b, key)),
      );
      const ok = results.filter((r) => r.status === 200);
      const limited = results.filter((r) => r.status === 429);
      expect([ok.length, limited.length]).toEqual([expectedOk, expectedLimited]);
      for (const r of limited) {
        expect(r.body.error.code).toBe("rate_limited");
        expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
        expect(r.headers.get("ratelimit-remaining")).toBe("0");
        expect(r.headers.get("ratelimit-limit")).toBe("60");
      }
      // Every admitted request saw a distinct remaining count: the window is shared exactly.
      const remaining = ok
        .map((r) => Number(r.headers.get("ratelimit-remaining")))
        .sort((x, y) => x - y);
      expect(remaining).toEqual(Array.from({ length: expectedOk }, (_, i) => 60 - expectedOk + i));
    },
  );

  it("a tier change made through one process applies on the other at once", async () => {
    const { key, accountId } = await signUp(a.url);
    await admin(a.url, `/accounts/${accountId}/tier`, { method: "PUT", body: { tier: "starter" } });
    expect((await me(b, key)).headers.get("ratelimit-limit")).toBe("300");
  });
});

describe("credits across processes", () => {
  it("1,000 concurrent 1-credit calls against a balance of 100: exactly 100 succeed, low and depleted fire once", async () => {
    const { key, accountId } = await signUp(a.url);
    await admin(a.url, `/accounts/${accountId}/tier`, {
      method: "PUT",
      body: { tier: "business" },
    }); // 1,000 requests a minute
    await admin(b.url, `/accounts/${accountId}/credits`, {
      body: { amount: 75, reason: "to 100" },
    });
    const results = await Promise.all(
      Array.from({ length: 1000 }, (_, i) =>
        callTool(i % 2 ? a.url : b.url, key, "hash", { text: String(i) }),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(100);
    expect(statuses.filter((s) => s === 402)).toHaveLength(900);

    const store = createRedisStore({
      url: REDIS_URL,
      keyPrefix: prefix,
      tiers: tierLimits(),
      periodMs: PERIOD_MS,
    });
    try {
      expect((await store.getAccount(accountId))?.balance).toBe(0);
      const events = (await eventsOf(store, accountId, 3)).map((e) => e.event);
      expect(events.filter((e) => e === "credits.low")).toHaveLength(1);
      expect(events.filter((e) => e === "credits.depleted")).toHaveLength(1);
      expect((await ledgerOf(store, accountId)).filter((e) => e.kind === "debit")).toHaveLength(
        100,
      );
    } finally {
      await store.close();
    }
  });
});

describe("process lifecycle", () => {
  // Twice: a SIGTERM sent to the whole process group reaches node once more through npm; the
  // repeat changes nothing.
  it.each([1, 2])(
    "SIGTERM (sent %i times) lets an in-flight call finish, then exits",
    async (times) => {
      const llm = await startFakeLlm();
      llm.state.delayMs = 1500;
      const c = await spawnGateway(prefix, { AI_BASE_URL: `${llm.url}/v1`, AI_MODEL: "m" });
      try {
        const { key, accountId } = await signUp(c.url);
        await admin(c.url, `/accounts/${accountId}/tier`, { method: "PUT", body: { tier: "pro" } });
        const inFlight = callTool(c.url, key, "ai-generate", { prompt: "slow" });
        await llm.reached(1);
        const exited = c.stop("SIGTERM");
        for (let sent = 1; sent < times; sent++) {
          await new Promise((r) => setTimeout(r, 100));
          c.child.kill("SIGTERM");
        }
        const res = await inFlight;
        expect(res.status).toBe(200);
        expect(res.body.text).toBe("echo: slow");
        expect(await exited).toBe(0);
        expect(c.output.join("\n")).toContain('"msg":"stopped"');
      } finally {
        await llm.stop();
      }
    },
  );

  it("SIGTERM past the grace period answers a call still running 503 shutting_down and refunds it", async () => {
    const llm = await startFakeLlm();
    llm.state.delayMs = 20_000;
    const c = await spawnGateway(prefix, {
      AI_BASE_URL: `${llm.url}/v1`,
      AI_MODEL: "m",
      SHUTDOWN_GRACE_SECONDS: "1",
    });
    try {
      const { key, accountId } = await signUp(c.url);
      await admin(c.url, `/accounts/${accountId}/tier`, { method: "PUT", body: { tier: "pro" } });
      const before = (await me(c, key)).body.credits;
      const inFlight = callTool(c.url, key, "ai-generate", { prompt: "slow" });
      await llm.reached(1);
      const exited = c.stop("SIGTERM");
      const res = await inFlight;
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe("shutting_down");
      expect(res.headers.get("retry-after")).toBe("1");
      expect(await exited).toBe(0);
      // Read through the other process: the charge was given back before the process exited.
      expect((await me(a, key)).body.credits).toBe(before);
      const usage = await call(`${a.url}/api/v1/usage?tool=ai-generate`, { key });
      expect(usage.body.data.map((e: { kind: string; tool: string }) => [e.kind, e.tool])).toEqual([
        ["refund", "ai-generate"],
        ["debit", "ai-generate"],
      ]);
    } finally {
      await llm.stop();
    }
  });

  it("stops cleanly on SIGTERM, and never logs a full key", async () => {
    const c = await spawnGateway(prefix);
    const { key } = await signUp(c.url);
    await me(c, key);
    expect(await c.stop("SIGTERM")).toBe(0);
    const log = c.output.join("\n");
    expect(log).toContain('"msg":"stopped"');
    expect(log).not.toContain(key.slice(25));
  });
});
