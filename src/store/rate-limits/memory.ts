/** Rate limits that are not an account's own admission, in memory: a sliding-window log per bucket. */
import type { MemoryState } from "../memory-state.js";
import type { RateLimiter } from "./index.js";

export function memoryRateLimits(state: MemoryState): RateLimiter {
  const buckets = new Map<string, { at: number; member: string }[]>();
  function slide(log: { at: number }[], limit: number, windowMs: number, count = 1) {
    const now = state.now();
    while (log.length > 0 && log[0]!.at <= now - windowMs) log.shift();
    const allowed = log.length + count <= limit;
    return {
      allowed,
      now,
      remaining: allowed ? limit - log.length - count : limit - Math.min(log.length, limit),
      resetOf: (oldest: number | undefined) =>
        oldest === undefined ? windowMs : oldest + windowMs - now,
    };
  }

  return {
    async hitRateLimit(bucket: string, limit: number, windowMs: number, member: string, count = 1) {
      const log = buckets.get(bucket) ?? [];
      buckets.set(bucket, log);
      const window = slide(log, limit, windowMs, count);
      // As the Redis script names them: the member, then `member#2`… for the rest of a batch.
      if (window.allowed)
        for (let i = 1; i <= count; i++)
          log.push({ at: window.now, member: i === 1 ? member : `${member}#${i}` });
      return {
        allowed: window.allowed,
        limit,
        remaining: window.remaining,
        resetMs: log.length ? window.resetOf(log[0]!.at) : 0,
      };
    },

    async releaseRateLimit(bucket: string, member: string) {
      const log = buckets.get(bucket);
      if (log)
        buckets.set(
          bucket,
          log.filter((hit) => hit.member !== member),
        );
    },
  };
}
