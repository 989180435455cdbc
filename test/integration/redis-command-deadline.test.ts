import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PERIOD_MS } from "../../src/accounts/tiers.js";
import { StoreUnavailableError } from "../../src/store/errors.js";
import { tierLimits } from "../../src/store/index.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis.js";
import { freePort, startPrivateRedis } from "../helpers/redis-server.js";

/** Each store command has a deadline (503 store_unavailable past it); a busy process is not a slow Redis. */
const DEADLINE_MS = 300;
let redis: Awaited<ReturnType<typeof startPrivateRedis>>;
let store: RedisStore;
beforeAll(async () => {
  redis = await startPrivateRedis();
  store = createRedisStore({
    url: redis.url,
    keyPrefix: "deadline:",
    tiers: tierLimits(),
    periodMs: PERIOD_MS,
    commandTimeoutMs: DEADLINE_MS,
  });
  await store.ping();
});
afterAll(async () => {
  await store?.close();
  await redis?.stop();
});

/** Holds the event loop, as a burst of CPU work in the gateway does. */
function busyFor(ms: number) {
  const until = Date.now() + ms;
  while (Date.now() < until);
}

/** How long, from now, until a command is answered again (polled; 3 s at most). */
async function msUntilAnswered(): Promise<number> {
  const from = Date.now();
  while (Date.now() - from < 3000) {
    if ((await store.getAccount("acct_missing").catch((e: unknown) => e)) === null) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - from;
}

describe("a store command's deadline", () => {
  it("does not fail a command that Redis answered while the process was busy past the deadline", async () => {
    const pending = Promise.all([store.getAccount("acct_missing"), store.ping()]);
    busyFor(DEADLINE_MS * 3);
    await expect(pending).resolves.toEqual([null, undefined]);
  });

  it("counts the deadline from when a command leaves: one made just before CPU work is not failed for that work", async () => {
    // Commands made in one turn leave together once it ends (a corked socket): this one leaves
    // after the busy spell, and Redis then takes a third of the deadline to answer.
    const pending = store.getAccount("acct_missing");
    busyFor(DEADLINE_MS * 2);
    redis.pause();
    setTimeout(() => redis.resume(), DEADLINE_MS / 3);
    await expect(pending).resolves.toBeNull();
  });

  it("fails a command with StoreUnavailableError soon after the deadline when Redis stops answering, and recovers", async () => {
    redis.pause();
    try {
      const started = Date.now();
      const err = await store.getAccount("acct_missing").catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreUnavailableError);
      expect((err as Error).message).toMatch(/timed out/);
      expect(Date.now() - started).toBeLessThan(DEADLINE_MS + 1000);
    } finally {
      redis.resume();
    }
    expect(await msUntilAnswered()).toBeLessThan(DEADLINE_MS + 500);
  });

  it("once one is unanswered past its deadline, fails the next at once (not each at its own deadline) until Redis answers again", async () => {
    redis.pause();
    try {
      const first = await store.getAccount("acct_missing").catch((e: unknown) => e);
      expect(first).toBeInstanceOf(StoreUnavailableError);
      // A request's second and third commands: refused at once, as while disconnected.
      const started = Date.now();
      for (const _ of [1, 2]) {
        const next = await store.getAccount("acct_missing").catch((e: unknown) => e);
        expect(next).toBeInstanceOf(StoreUnavailableError);
        expect((next as Error).message).toBe("Redis is not answering");
      }
      expect(Date.now() - started).toBeLessThan(DEADLINE_MS / 3);
    } finally {
      redis.resume();
    }
    // Its PINGs find it answering again, and commands go through.
    expect(await msUntilAnswered()).toBeLessThan(DEADLINE_MS + 500);
  });
});

describe("a Redis never reached since start-up", () => {
  it("refuses each command at its deadline without gathering listeners on the client (no MaxListenersExceededWarning)", async () => {
    const nowhere = createRedisStore({
      url: `redis://127.0.0.1:${await freePort()}`,
      keyPrefix: "never:",
      tiers: tierLimits(),
      periodMs: PERIOD_MS,
      commandTimeoutMs: 50,
    });
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on("warning", onWarning);
    try {
      for (let i = 0; i < 15; i++)
        await expect(nowhere.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
      await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
      expect(warnings.filter((w) => w.startsWith("MaxListenersExceededWarning"))).toEqual([]);
    } finally {
      process.off("warning", onWarning);
      await nowhere.close();
    }
  });
});
