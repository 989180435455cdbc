/** Open charged calls on Redis: a hash of each process's calls and a sorted set of heartbeats, in one slot. */
import { type RedisContext, redisKey } from "../redis-context.js";
import type { OpenCharge, OpenChargeStore } from "./index.js";

/** How long a process's open calls (and the marks of those taken) are kept: far past any call. */
const KEPT_MS = 3600_000;

export function redisOpenCharges({ redis, call, script }: RedisContext): OpenChargeStore {
  return {
    async heartbeat(processId, at) {
      await call(() => redis.zadd(redisKey.chargeProcesses(), at, processId));
    },

    async markOpen(processId, charges) {
      if (charges.length === 0) return;
      const key = redisKey.openCharges(processId);
      const fields = charges.flatMap((c) => [c.requestId, JSON.stringify(c)]);
      await call(() =>
        redis
          .multi()
          .hset(key, ...fields)
          .pexpire(key, KEPT_MS)
          .exec(),
      );
    },

    async closeOpen(processId, requestId) {
      return script<"closed" | "taken">(
        "open-charge-close",
        [redisKey.openCharges(processId)],
        [requestId],
      );
    },

    async silentProcesses(before) {
      return call(() => redis.zrangebyscore(redisKey.chargeProcesses(), "-inf", `(${before}`));
    },

    async takeOpen(processId, now) {
      const taken = await script<string[]>(
        "open-charges-take",
        [redisKey.openCharges(processId), redisKey.chargeProcesses()],
        [processId, now],
      );
      return taken.map((raw) => JSON.parse(raw) as OpenCharge);
    },

    async leave(processId) {
      await call(() =>
        redis
          .multi()
          .zrem(redisKey.chargeProcesses(), processId)
          .del(redisKey.openCharges(processId))
          .exec(),
      );
    },
  };
}
