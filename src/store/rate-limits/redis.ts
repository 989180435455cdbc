/** Rate limits that are not an account's own admission, on Redis: one sorted set per bucket (`rl:<name>`). */
import { type RedisContext, redisKey } from "../redis-context.js";
import type { RateState } from "../types.js";
import type { RateLimiter } from "./index.js";

export function redisRateLimits({ redis, call, script }: RedisContext): RateLimiter {
  return {
    async hitRateLimit(bucket: string, limit: number, windowMs: number, member: string, count = 1) {
      return script<RateState & { allowed: boolean }>(
        "rate-limit",
        [redisKey.bucket(bucket)],
        [limit, windowMs, member, count],
      );
    },

    async releaseRateLimit(bucket: string, member: string): Promise<void> {
      await call(() => redis.zrem(redisKey.bucket(bucket), member));
    },
  };
}
