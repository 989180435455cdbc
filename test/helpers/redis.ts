import { Redis } from "ioredis";
import { randomId } from "../../src/lib/ids.js";

export const REDIS_URL = process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

/** A key prefix no other test uses, so tests share one Redis without seeing each other. */
export function uniquePrefix(label: string): string {
  return `test:${label}:${randomId(8)}:`;
}

/** Deletes every key under a prefix (test clean-up). */
export async function dropPrefix(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  try {
    // The store's keys, and BullMQ's (whose prefix is braced: `{<prefix>bull}`).
    for (const pattern of [`${prefix}*`, `{${prefix}*`]) {
      let cursor = "0";
      do {
        const [next, keys] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 500);
        cursor = next;
        if (keys.length > 0) await redis.del(...keys);
      } while (cursor !== "0");
    }
  } finally {
    redis.disconnect();
  }
}
