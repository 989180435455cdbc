import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PERIOD_MS } from "../../src/accounts/tiers.js";
import { tierLimits } from "../../src/store/index.js";
import { createRedisStore } from "../../src/store/redis.js";
import { ledgerOf } from "../helpers/books.js";
import { startFakeLlm } from "../helpers/fake-providers.js";
import {
  balanceOf,
  callTool,
  fundedAccount,
  spawnGateway,
  type GatewayProcess,
} from "../helpers/gateway.js";
import { startPrivateRedis } from "../helpers/redis-server.js";

/**
 * Redis goes away while a charged call is at its worker: the call's end (its refund, or its
 * Idempotency-Key's answer) cannot be written then. No credit may be lost for it: the caller is
 * told what happened, and once Redis is back the books say the same.
 */
describe("Redis goes away while a charged call is at its worker", () => {
  let redis: Awaited<ReturnType<typeof startPrivateRedis>>;
  let llm: Awaited<ReturnType<typeof startFakeLlm>>;
  let gw: GatewayProcess;
  beforeAll(async () => {
    redis = await startPrivateRedis();
    llm = await startFakeLlm();
    gw = await spawnGateway("outage:", {
      REDIS_URL: redis.url,
      AI_BASE_URL: `${llm.url}/v1`,
      AI_MODEL: "m",
      // Keeps an Idempotency-Key's lease (timeout + queue wait + 5 s) short enough to outlast.
      TOOL_TIMEOUTS: "ai-generate=2500",
      POOL_QUEUE_TIMEOUT_MS: "500",
    });
  });
  afterAll(async () => {
    await gw?.stop();
    await llm?.stop();
    await redis?.stop();
  });

  const ledger = async (accountId: string) => {
    const store = createRedisStore({
      url: redis.url,
      keyPrefix: "outage:",
      tiers: tierLimits(),
      periodMs: PERIOD_MS,
    });
    try {
      return await ledgerOf(store, accountId);
    } finally {
      await store.close();
    }
  };

  /** Starts a slow ai-generate call, and takes Redis away once the provider has it. */
  async function callWhileRedisGoes(key: string, headers: Record<string, string> = {}) {
    llm.state.delayMs = 1500;
    const before = llm.state.received;
    const inFlight = callTool(gw.url, key, "ai-generate", { prompt: "outage" }, headers);
    await llm.reached(before + 1);
    await redis.kill();
    return inFlight;
  }

  async function redisBack(key: string, { probe = true } = {}) {
    llm.state.delayMs = 0;
    llm.state.status = 200;
    await redis.restart();
    if (!probe) return;
    // The gateway reconnects by itself.
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      const res = await callTool(gw.url, key, "hash", { text: "back" }).catch(() => null);
      if (res?.status === 200) return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error("the gateway did not come back after Redis did");
  }

  it("refunds a call that failed while Redis was down, once Redis is back", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100, "pro");
    llm.state.status = 503;
    const failed = await callWhileRedisGoes(key);
    expect([failed.status, failed.body.error.code]).toEqual([502, "tool_failed"]);
    expect(failed.body.error.message).toMatch(/not charged/);
    await redisBack(key);
    // The failed call's refund reaches the books (the hash call after it is the one charge).
    const deadline = Date.now() + 10_000;
    while ((await balanceOf(gw.url, key)) !== 99 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 250));
    expect(await balanceOf(gw.url, key)).toBe(99);
    const entries = await ledger(accountId);
    const aiCall = entries.filter((e) => e.tool === "ai-generate");
    expect(aiCall.map((e) => e.kind).sort()).toEqual(["debit", "refund"]);
  }, 60_000);

  it("answers a call served while Redis was down, charged once; its Idempotency-Key replays or reruns it free", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100, "pro");
    const headers = { "idempotency-key": "served-in-outage" };
    const served = await callWhileRedisGoes(key, headers);
    expect([served.status, served.body.text]).toEqual([200, "echo: outage"]);
    expect(served.headers.get("x-credits-charged")).toBe("10");
    await redisBack(key);
    const retry = await callTool(gw.url, key, "ai-generate", { prompt: "outage" }, headers);
    expect([retry.status, retry.body.text]).toEqual([200, "echo: outage"]);
    // 100 - 10 for the call, - 1 for the hash calls that found Redis back.
    const hashCalls = (await ledger(accountId)).filter(
      (e) => e.tool === "hash" && e.kind === "debit",
    ).length;
    expect(await balanceOf(gw.url, key)).toBe(90 - hashCalls);
  }, 60_000);

  it("leaves a failed call's debit to a retry that took its Idempotency-Key over after a long outage: served, charged once", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100, "pro");
    const headers = { "idempotency-key": "failed-in-long-outage" };
    llm.state.status = 503;
    const startedAt = Date.now();
    const failed = await callWhileRedisGoes(key, headers);
    expect([failed.status, failed.body.error.code]).toEqual([502, "tool_failed"]);
    // Redis stays away past the key's lease (2.5 s + 0.5 s + 5 s): a retry may then take it over.
    await new Promise((r) => setTimeout(r, Math.max(0, startedAt + 9_000 - Date.now())));
    await redisBack(key, { probe: false });
    let retry = await callTool(gw.url, key, "ai-generate", { prompt: "outage" }, headers);
    for (let i = 0; i < 50 && retry.status === 503; i++) {
      await new Promise((r) => setTimeout(r, 100));
      retry = await callTool(gw.url, key, "ai-generate", { prompt: "outage" }, headers);
    }
    expect([retry.status, retry.body.text]).toEqual([200, "echo: outage"]);
    // Time for any refund still pending in the gateway to land.
    await new Promise((r) => setTimeout(r, 2500));
    const replay = await callTool(gw.url, key, "ai-generate", { prompt: "outage" }, headers);
    expect([replay.status, replay.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    expect(await balanceOf(gw.url, key)).toBe(90);
    const aiCall = (await ledger(accountId)).filter((e) => e.tool === "ai-generate");
    expect(aiCall.map((e) => e.kind)).toEqual(["debit"]);
  }, 60_000);
});
