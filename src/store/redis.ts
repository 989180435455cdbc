/**
 * The Redis store, shared by every gateway process: one connection (a server or a Redis Cluster)
 * and the Lua scripts (src/credits/lua), set up once in redis-context.ts, and each concern's
 * operations from its own folder (`<concern>/redis.ts`) composed into one `Store`.
 */
import { Cluster } from "ioredis";
import { redisAccounts } from "./accounts/redis.js";
import { redisCredits } from "./credits/redis.js";
import { redisCustomTools } from "./custom-tools/redis.js";
import { redisIdempotency } from "./idempotency/redis.js";
import { redisKeys } from "./keys/redis.js";
import { redisLedger } from "./ledger/redis.js";
import { redisOutbox } from "./outbox/redis.js";
import { redisPayments } from "./payments/redis.js";
import { redisRateLimits } from "./rate-limits/redis.js";
import type { RedisConnection } from "./redis-connection.js";
import { openRedisContext, type RedisStoreOptions } from "./redis-context.js";
import { redisSessions } from "./sessions/redis.js";
import { redisOpenCharges } from "./open-charges/redis.js";
import { redisSingleUse } from "./single-use/redis.js";
import { redisSso } from "./sso/redis.js";
import type { Store } from "./types.js";
import { redisWebhooks } from "./webhooks/redis.js";

export type { RedisStoreOptions } from "./redis-context.js";

/** The Redis store; `redis` is its connection, for tests that look at the keys themselves. */
export type RedisStore = Store & { readonly redis: RedisConnection };

export function createRedisStore(options: RedisStoreOptions): RedisStore {
  const context = openRedisContext(options);
  const { redis, call, requestsSent } = context;
  return {
    redis,
    ...redisAccounts(context),
    ...redisKeys(context),
    ...redisCredits(context),
    ...redisLedger(context),
    ...redisRateLimits(context),
    ...redisOutbox(context),
    ...redisIdempotency(context),
    ...redisCustomTools(context),
    ...redisWebhooks(context),
    ...redisPayments(context),
    ...redisSingleUse(context),
    ...redisOpenCharges(context),
    ...redisSso(context),
    ...redisSessions(context),
    requestsSent,
    async ping() {
      // A Cluster is ready when every master answers: one node's PING says nothing of the slots
      // the others serve, and keyed calls on a dead master's slots fail.
      await call<unknown>(() => (redis instanceof Cluster ? pingMasters(redis) : redis.ping()));
    },
    async close() {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}

/**
 * Pings the master of every slot range the Cluster reports. ioredis drops a node it lost from its
 * pool, so a master that is down is found missing by its address, not by a failed PING.
 */
async function pingMasters(cluster: Cluster): Promise<void> {
  const ranges = (await cluster.call("CLUSTER", "SLOTS")) as [number, number, [string, number]][];
  const connected = new Map(
    cluster.nodes("master").map((node) => [`${node.options.host}:${node.options.port}`, node]),
  );
  // A master that serves several ranges is pinged once.
  const masters = new Set(ranges.map(([, , [host, port]]) => `${host}:${port}`));
  await Promise.all(
    [...masters].map((address) => {
      const node = connected.get(address);
      if (!node) throw new Error(`ECONNREFUSED: the master at ${address} is not connected`);
      return node.ping();
    }),
  );
}
