import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PERIOD_MS } from "../../src/accounts/tiers.js";
import { eventRecord } from "../../src/events/types.js";
import { newEventId } from "../../src/lib/ids.js";
import { tierLimits } from "../../src/store/index.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis.js";
import { startPrivateRedis } from "../helpers/redis-server.js";

let redis: Awaited<ReturnType<typeof startPrivateRedis>>;
let store: RedisStore;
let observer: Redis;
beforeAll(async () => {
  redis = await startPrivateRedis({ durable: false });
  store = createRedisStore({
    url: redis.url,
    keyPrefix: "coalesce:",
    tiers: tierLimits(),
    periodMs: PERIOD_MS,
  });
  await store.ping();
  observer = new Redis(redis.url);
});
afterAll(async () => {
  observer?.disconnect();
  await store?.close();
  await redis?.stop();
});

/** The socket reads Redis has made so far (its own INFO request's read included). */
async function readsByRedis(): Promise<number> {
  const stats = await observer.info("stats");
  return Number(/total_reads_processed:(\d+)/.exec(stats)![1]);
}

describe("the store's writes to one Redis node", () => {
  it("sends the commands started in one turn of the event loop in one socket write", async () => {
    const before = await readsByRedis();
    // Five payments' credits answered by one batch's receipt start their commands together.
    const answers = await Promise.all(
      ["a", "b", "c", "d", "e"].map((id) => store.getAccount(`acct_${id}`)),
    );
    const after = await readsByRedis();
    expect(answers).toEqual([null, null, null, null, null]);
    // One read for the five commands, one for the observer's second INFO.
    expect(after - before).toBe(2);
  });

  it("sends a script and the index writes that go with it in one socket write", async () => {
    const create = (id: string) =>
      store.createAccount(
        { id, email: null, tier: "free" },
        { amount: 0, reason: "signup", requestId: `signup:${id}` },
        [
          eventRecord(newEventId(), "agent.registered", id, {
            agent_id: id,
            email: null,
            tier: "free",
          }),
        ],
      );
    // Once first, so Redis has the script (a first EVALSHA is answered NOSCRIPT, then sent again).
    await create(`acct_coalesce_first_${Date.now()}`);
    const id = `acct_coalesce_${Date.now()}`;
    const before = await readsByRedis();
    // create-account, then the accounts index (ZADD) and the outbox index (SADD) after it.
    await create(id);
    const after = await readsByRedis();
    expect(after - before).toBe(2);
    // All three were made: the indexes name the new account.
    expect(await observer.zscore("coalesce:accounts", id)).not.toBeNull();
    expect(await observer.sismember("coalesce:outbox:accounts", id)).toBe(1);
  });
});
