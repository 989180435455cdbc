import { execFileSync } from "node:child_process";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PERIOD_MS } from "../../src/accounts/tiers.js";
import { tierLimits } from "../../src/store/index.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis.js";
import { ledgerOf } from "../helpers/books.js";
import { startFakeLlm } from "../helpers/fake-providers.js";
import {
  call,
  callTool,
  dropPrefix,
  eventsOf,
  fundedAccount,
  spawnGateway,
  spawnGatewayPair,
  uniquePrefix,
  type GatewayProcess,
} from "../helpers/gateway.js";
import { REDIS_URL } from "../helpers/redis.js";
import { startPrivateRedis } from "../helpers/redis-server.js";

/** Faults, each with real processes: the books must add up afterwards. */

/**
 * Every credit accounted: the entries sum to the balance, and each served call is one debit that was
 * not refunded. Read once the refunds the store could not take while it was away have landed: they
 * are retried in the background once a second (credits/until-store-answers.ts), later than that on
 * a loaded machine.
 */
async function expectBooksAddUp(store: RedisStore, accountId: string, served: number) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const entries = await ledgerOf(store, accountId);
    const account = await store.getAccount(accountId);
    const refunded = new Set(entries.filter((e) => e.kind === "refund").map((e) => e.requestId));
    const kept = entries.filter((e) => e.kind === "debit" && !refunded.has(e.requestId));
    const added = entries.reduce((sum, e) => sum + e.amount, 0) === account!.balance;
    if ((added && kept.length === served) || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const entries = await ledgerOf(store, accountId);
  const account = await store.getAccount(accountId);
  expect(entries.reduce((sum, e) => sum + e.amount, 0)).toBe(account!.balance);
  const refunded = new Set(entries.filter((e) => e.kind === "refund").map((e) => e.requestId));
  const kept = entries.filter((e) => e.kind === "debit" && !refunded.has(e.requestId));
  expect(kept.length).toBe(served);
  expect(new Set(entries.filter((e) => e.kind === "debit").map((e) => e.requestId)).size).toBe(
    entries.filter((e) => e.kind === "debit").length,
  );
}

/** A store on `url` under `keyPrefix`, as the gateways under test use it, for `use` alone. */
async function withStore<T>(
  url: string,
  keyPrefix: string,
  use: (store: RedisStore) => Promise<T>,
) {
  const store = createRedisStore({ url, keyPrefix, tiers: tierLimits(), periodMs: PERIOD_MS });
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}

describe("Redis stops mid-traffic", () => {
  let redis: Awaited<ReturnType<typeof startPrivateRedis>>;
  let gw: GatewayProcess;
  beforeAll(async () => {
    redis = await startPrivateRedis();
    gw = await spawnGateway("faults:", { REDIS_URL: redis.url });
  });
  afterAll(async () => {
    await gw?.stop();
    await redis?.stop();
  });

  it("answers 503 store_unavailable quickly, charges nothing for it, and resumes without a restart", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 1000, "business");
    let served = 0;
    let unavailable = 0;
    let slowest = 0;
    let stop = false;
    // Four callers, paced to stay inside the Business tier's 1,000 requests a minute.
    const traffic = Promise.all(
      Array.from({ length: 4 }, async (_, w) => {
        for (let i = 0; !stop; i++) {
          await new Promise((r) => setTimeout(r, 50));
          const started = Date.now();
          const res = await callTool(gw.url, key, "hash", { text: `${w}-${i}` });
          slowest = Math.max(slowest, Date.now() - started);
          if (res.status === 200) served++;
          else if (res.body?.error?.code === "store_unavailable") unavailable++;
          else throw new Error(`unexpected ${res.status} ${JSON.stringify(res.body)}`);
        }
      }),
    );
    await new Promise((r) => setTimeout(r, 500));
    await redis.kill();
    await new Promise((r) => setTimeout(r, 1500));
    await redis.restart();
    await new Promise((r) => setTimeout(r, 2500));
    stop = true;
    await traffic;
    expect(unavailable).toBeGreaterThan(0);
    expect(served).toBeGreaterThan(0);
    expect(slowest).toBeLessThan(3000);
    // The service came back by itself; admissions lost with Redis are refunded once it is back.
    expect((await callTool(gw.url, key, "hash", { text: "after" })).status).toBe(200);
    served++;
    await new Promise((r) => setTimeout(r, 1500));
    await withStore(redis.url, "faults:", async (store) => {
      await expectBooksAddUp(store, accountId, served);
    });
  }, 30_000);
});

describe("Redis out of memory (maxmemory, noeviction)", () => {
  let redis: Awaited<ReturnType<typeof startPrivateRedis>>;
  let gw: GatewayProcess;
  beforeAll(async () => {
    redis = await startPrivateRedis();
    gw = await spawnGateway("oom:", { REDIS_URL: redis.url });
  });
  afterAll(async () => {
    await gw?.stop();
    await redis?.stop();
  });

  it("answers 503 store_unavailable, not 500, charges nothing for it, and serves again once Redis has room", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 1000, "business");
    expect((await callTool(gw.url, key, "hash", { text: "before" })).status).toBe(200);
    const admin = new Redis(redis.url);
    try {
      await admin.config("SET", "maxmemory-policy", "noeviction");
      await admin.config("SET", "maxmemory", "1");
      const refused = await callTool(gw.url, key, "hash", { text: "full" });
      expect([
        refused.status,
        refused.body.error?.code,
        refused.headers.get("retry-after"),
      ]).toEqual([503, "store_unavailable", "1"]);
      await admin.config("SET", "maxmemory", "0");
    } finally {
      admin.disconnect();
    }
    expect((await callTool(gw.url, key, "hash", { text: "after" })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1500));
    await withStore(redis.url, "oom:", async (store) => {
      await expectBooksAddUp(store, accountId, 2);
    });
  }, 30_000);
});

describe("a tool worker crashes mid-call", () => {
  const prefix = uniquePrefix("workercrash");
  let llm: Awaited<ReturnType<typeof startFakeLlm>>;
  let gw: GatewayProcess;
  beforeAll(async () => {
    llm = await startFakeLlm();
    gw = await spawnGateway(prefix, { AI_BASE_URL: `${llm.url}/v1`, AI_MODEL: "m" });
  });
  afterAll(async () => {
    await gw?.stop();
    await llm?.stop();
    await dropPrefix(prefix);
  });

  it("refunds the call with tool.error, and the pool recovers", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100, "pro");
    llm.state.delayMs = 2000;
    const before = llm.state.received;
    const inFlight = callTool(gw.url, key, "ai-generate", { prompt: "crash" });
    await llm.reached(before + 1);
    const workerPid = execFileSync("pgrep", ["-P", String(gw.child.pid), "-f", "workers/main"])
      .toString()
      .trim()
      .split("\n")[0]!;
    process.kill(Number(workerPid), "SIGKILL");
    const res = await inFlight;
    expect([res.status, res.body.error.code]).toEqual([503, "worker_unavailable"]);
    expect(res.headers.get("retry-after")).toBe("2");
    expect((await call(`${gw.url}/api/v1/account`, { key })).body.credits).toBe(100);
    llm.state.delayMs = 0;
    // The workers are restarted: on a loaded machine their start-up alone can take many seconds.
    const recoveredBy = Date.now() + 30_000;
    let after = await callTool(gw.url, key, "hash", { text: "recovered" });
    while (after.status !== 200 && Date.now() < recoveredBy) {
      await new Promise((r) => setTimeout(r, 250));
      after = await callTool(gw.url, key, "hash", { text: "recovered" });
    }
    expect(after.status).toBe(200);
    await withStore(REDIS_URL, prefix, async (store) => {
      // The crashed call's event (calls made while the workers restarted report their own).
      const errors = (await eventsOf(store, accountId, 2)).filter(
        (e) => e.event === "tool.error" && e.data.tool_name === "ai-generate",
      );
      expect(errors.map((e) => e.data)).toMatchObject([
        { tool_name: "ai-generate", credits_charged: 0, error_code: "worker_unavailable" },
      ]);
    });
  }, 60_000);
});

describe("a gateway process is killed under load", () => {
  const prefix = uniquePrefix("gwkill");
  let a: GatewayProcess;
  let b: GatewayProcess;
  beforeAll(async () => {
    [a, b] = await spawnGatewayPair(prefix);
  });
  afterAll(async () => {
    await Promise.all([a?.stop("SIGKILL"), b?.stop()]);
    await dropPrefix(prefix);
  });

  it("loses and creates no credit, loses no event, and SIGTERM drains the survivor", async () => {
    const { key, accountId } = await fundedAccount(a.url, 200, "business");
    let servedByB = 0;
    let stop = false;
    const onA = Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        const results: number[] = [];
        for (let j = 0; !stop; j++)
          results.push(
            await callTool(a.url, key, "hash", { text: `a${i}-${j}` }).then(
              (r) => r.status,
              () => 0,
            ),
          );
        return results;
      }),
    );
    const onB = Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        for (let j = 0; !stop; j++)
          if ((await callTool(b.url, key, "hash", { text: `b${i}-${j}` })).status === 200)
            servedByB++;
      }),
    );
    await new Promise((r) => setTimeout(r, 400));
    await a.stop("SIGKILL");
    await new Promise((r) => setTimeout(r, 400));
    stop = true;
    const servedByA = (await onA).flat().filter((s) => s === 200).length;
    await onB;
    await withStore(REDIS_URL, prefix, async (store) => {
      const entries = await ledgerOf(store, accountId);
      const account = await store.getAccount(accountId);
      expect(entries.reduce((sum, e) => sum + e.amount, 0)).toBe(account!.balance);
      // Calls cut off with the process may have been charged and run without the caller seeing the answer;
      // every answered call was charged, and nothing was charged twice.
      const debits = entries.filter((e) => e.kind === "debit");
      expect(new Set(debits.map((e) => e.requestId)).size).toBe(debits.length);
      expect(debits.length).toBeGreaterThanOrEqual(servedByA + servedByB);
      expect(debits.length).toBeLessThanOrEqual(servedByA + servedByB + 6);
      // The low-credit alert (200 credits, so below 40) fires once and reaches the event log through the survivor.
      if (account!.balance < 40)
        expect(
          (await eventsOf(store, accountId, 2)).filter((e) => e.event === "credits.low"),
        ).toHaveLength(1);
    });
    // SIGTERM on the survivor: it drains and exits cleanly.
    expect(await b.stop("SIGTERM")).toBe(0);
  }, 30_000);
});

describe("a call cut off by a gateway crash, retried with its Idempotency-Key", () => {
  const prefix = uniquePrefix("idemcrash");
  let llm: Awaited<ReturnType<typeof startFakeLlm>>;
  let a: GatewayProcess;
  let b: GatewayProcess;
  beforeAll(async () => {
    llm = await startFakeLlm();
    // A short tool timeout keeps the claim's lease (timeout + queue wait + 5 s) short for the test.
    const env = {
      AI_BASE_URL: `${llm.url}/v1`,
      AI_MODEL: "m",
      TOOL_TIMEOUTS: "ai-generate=2000",
      POOL_QUEUE_TIMEOUT_MS: "500",
    };
    [a, b] = await spawnGatewayPair(prefix, env);
  });
  afterAll(async () => {
    await Promise.all([a?.stop("SIGKILL"), b?.stop()]);
    await llm?.stop();
    await dropPrefix(prefix);
  });

  it("is answered on another process and charged once", async () => {
    const { key, accountId } = await fundedAccount(a.url, 100, "pro");
    const headers = { "idempotency-key": "crash-retry-1" };
    llm.state.delayMs = 3000;
    const cutOff = callTool(a.url, key, "ai-generate", { prompt: "hello" }, headers).catch(
      (err: Error) => err,
    );
    // Killed once the call is charged and on its way to the provider.
    const credits = async () =>
      (await call(`${b.url}/api/v1/account`, { key })).body.credits as number;
    for (let i = 0; i < 100 && (await credits()) === 100; i++)
      await new Promise((r) => setTimeout(r, 20));
    await a.stop("SIGKILL");
    expect(await cutOff).toBeInstanceOf(Error);
    const charged = await credits();
    expect(charged).toBeLessThan(100); // charged, and the caller saw nothing

    llm.state.delayMs = 0;
    const retry = await callTool(b.url, key, "ai-generate", { prompt: "hello" }, headers);
    expect(retry.status).toBe(200);
    expect(retry.body.text).toBe("echo: hello");
    const replay = await callTool(b.url, key, "ai-generate", { prompt: "hello" }, headers);
    expect([replay.status, replay.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    expect((await call(`${b.url}/api/v1/account`, { key })).body.credits).toBe(charged);

    await withStore(REDIS_URL, prefix, async (store) => {
      await expectBooksAddUp(store, accountId, 1);
    });
  }, 30_000);
});
