import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PERIOD_MS } from "../../src/accounts/tiers.js";
import { tierLimits } from "../../src/store/index.js";
import { createRedisStore } from "../../src/store/redis.js";
import { ledgerOf } from "../helpers/books.js";
import { startFakeLlm } from "../helpers/fake-providers.js";
import {
  balanceOf,
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

/**
 * A gateway process SIGKILLed with charged calls at their workers: the callers never get an
 * answer, so the survivor refunds every one of them, once (credits/open-charges.ts); a retry with
 * an Idempotency-Key then runs and is charged once.
 */
const prefix = uniquePrefix("openkill");

/**
 * Waits until the processes under `keyPrefix` have written `count` charged calls as open in Redis
 * (each sweep writes the calls open a second or more: 1 to 1.5 s in when the process keeps time,
 * later on a loaded machine), and checks there are that many.
 */
async function untilRecordedOpen(keyPrefix: string, count: number): Promise<void> {
  const redis = new Redis(REDIS_URL);
  const recorded = async () => {
    let n = 0;
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(
        cursor,
        "MATCH",
        `${keyPrefix}{open-charges}:calls:*`,
        "COUNT",
        1000,
      );
      cursor = next;
      for (const key of keys) n += await redis.hlen(key);
    } while (cursor !== "0");
    return n;
  };
  try {
    const deadline = Date.now() + 20_000;
    while ((await recorded()) < count && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect(await recorded()).toBe(count);
  } finally {
    redis.disconnect();
  }
}
let llm: Awaited<ReturnType<typeof startFakeLlm>>;
let a: GatewayProcess;
let b: GatewayProcess;
beforeAll(async () => {
  llm = await startFakeLlm();
  const env = { AI_BASE_URL: `${llm.url}/v1`, AI_MODEL: "m", TOOL_TIMEOUTS: "ai-generate=20000" };
  [a, b] = await spawnGatewayPair(prefix, env);
});
afterAll(async () => {
  await Promise.all([a?.stop("SIGKILL"), b?.stop()]);
  await llm?.stop();
  await dropPrefix(prefix);
});

it("refunds the calls a killed gateway left charged and unanswered, once, and the survivor serves their retries", async () => {
  const { key, accountId } = await fundedAccount(a.url, 100, "business");
  llm.state.delayMs = 8000;
  const before = llm.state.received;
  const keyed = { "idempotency-key": "cut-off-by-kill" };
  const cutOff = [
    ...Array.from({ length: 4 }, (_, i) =>
      callTool(a.url, key, "ai-generate", { prompt: `p${i}` }),
    ),
    callTool(a.url, key, "ai-generate", { prompt: "keyed" }, keyed),
  ].map((p) =>
    p.then(
      (r) => r.status,
      () => "no answer",
    ),
  );
  await llm.reached(before + 5);
  // Charged, at the provider for a while, recorded as open: then the process dies with them.
  await untilRecordedOpen(prefix, 5);
  expect(await balanceOf(b.url, key)).toBe(50);
  await a.stop("SIGKILL");
  expect(await Promise.all(cutOff)).toEqual(Array(5).fill("no answer"));

  // The survivor notices the silent process and refunds what it left open.
  const deadline = Date.now() + 30_000;
  while ((await balanceOf(b.url, key)) !== 100 && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 250));
  expect(await balanceOf(b.url, key)).toBe(100);

  llm.state.delayMs = 0;
  const retry = await callTool(b.url, key, "ai-generate", { prompt: "keyed" }, keyed);
  expect([retry.status, retry.body.text, retry.headers.get("idempotent-replayed")]).toEqual([
    200,
    "echo: keyed",
    null,
  ]);
  const replay = await callTool(b.url, key, "ai-generate", { prompt: "keyed" }, keyed);
  expect([replay.status, replay.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
  expect(await balanceOf(b.url, key)).toBe(90);

  const store = createRedisStore({
    url: REDIS_URL,
    keyPrefix: prefix,
    tiers: tierLimits(),
    periodMs: PERIOD_MS,
  });
  try {
    const entries = await ledgerOf(store, accountId);
    const account = await store.getAccount(accountId);
    expect(entries.reduce((sum, e) => sum + e.amount, 0)).toBe(account!.balance);
    const debits = entries.filter((e) => e.kind === "debit");
    const refunds = entries.filter((e) => e.kind === "refund");
    expect([debits.length, refunds.length]).toEqual([6, 5]);
    expect(new Set(refunds.map((e) => e.requestId)).size).toBe(5);
    const errors = (await eventsOf(store, accountId, 5)).filter((e) => e.event === "tool.error");
    expect(errors.map((e) => e.data.error_code)).toEqual(Array(5).fill("shutting_down"));
  } finally {
    await store.close();
  }
}, 90_000);

it("answers 503, not 200, a call a survivor refunded while its process was frozen past the silence limit", async () => {
  const frozenPrefix = uniquePrefix("openfrozen");
  const env = { AI_BASE_URL: `${llm.url}/v1`, AI_MODEL: "m", TOOL_TIMEOUTS: "ai-generate=30000" };
  const [frozen, survivor] = await Promise.all([
    spawnGateway(frozenPrefix, env),
    spawnGateway(frozenPrefix, env),
  ]);
  try {
    const { key } = await fundedAccount(frozen.url, 100, "business");
    llm.state.delayMs = 5000;
    const before = llm.state.received;
    const stalled = callTool(frozen.url, key, "ai-generate", { prompt: "frozen" });
    await llm.reached(before + 1);
    await untilRecordedOpen(frozenPrefix, 1);
    frozen.child.kill("SIGSTOP"); // a process stalled, not dead: its heartbeat stops
    const deadline = Date.now() + 30_000;
    while ((await balanceOf(survivor.url, key)) !== 100 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 250));
    expect(await balanceOf(survivor.url, key)).toBe(100);
    frozen.child.kill("SIGCONT");
    const answer = await stalled;
    // The provider answered meanwhile, but the call was refunded: it is not served as well.
    expect([answer.status, answer.body.error?.code]).toEqual([503, "shutting_down"]);
    expect(await balanceOf(frozen.url, key)).toBe(100);
  } finally {
    frozen.child.kill("SIGCONT");
    await Promise.all([frozen.stop(), survivor.stop()]);
    await dropPrefix(frozenPrefix);
  }
}, 90_000);
