/** Rate limits that are not an account's own admission, in memory: a sliding-window log per bucket. */
import { ExpiringMap } from "../../lib/expiring-map.js";
import type { MemoryState } from "../memory-state.js";
import type { RateLimiter } from "./index.js";

type Hit = { at: number; member: string };

export function memoryRateLimits(state: MemoryState): RateLimiter {
  /**
   * Each bucket's log, lapsing once its newest hit has left the window, as the Redis key does
   * (PEXPIRE window on each hit): a bucket per client address, kept for good, grew with every
   * address ever seen.
   */
  const buckets = new ExpiringMap<string, Hit[]>(state.now);
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
      const window = slide(log, limit, windowMs, count);
      // As the Redis script names them: the member, then `member#2`… for the rest of a batch.
      if (window.allowed)
        for (let i = 1; i <= count; i++)
          log.push({ at: window.now, member: i === 1 ? member : `${member}#${i}` });
      if (log.length) buckets.set(bucket, log, log[log.length - 1]!.at + windowMs);
      else buckets.delete(bucket);
      return {
        allowed: window.allowed,
        limit,
        remaining: window.remaining,
        resetMs: log.length ? window.resetOf(log[0]!.at) : 0,
      };
    },

    async releaseRateLimit(bucket: string, member: string) {
      const log = buckets.get(bucket);
      if (!log) return;
      // In place, so the bucket keeps its lapse time (the window is not known here).
      let kept = 0;
      for (const hit of log) if (hit.member !== member) log[kept++] = hit;
      log.length = kept;
      // As Redis deletes a sorted set whose last member is removed.
      if (!kept) buckets.delete(bucket);
    },
  };
}
