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

/**
 * Watches the commands Redis runs (MONITOR) until `stop()`: `onCommand` gets each one's arguments
 * and its source ("lua" inside a script). The connection is made here with an error listener from
 * the start, not by ioredis's `monitor()`: a busy Redis can send monitor lines in the same packet
 * as MONITOR's "OK", before ioredis has switched the connection to monitoring, and ioredis then
 * reports each as an error ("Command queue state error"). Those lines precede the watch and are
 * not wanted, so the errors are ignored, and the wait for "monitoring" is not `events.once`,
 * which would reject on the first of them (a CI run failed a test that way).
 */
export async function watchRedisCommands(
  onCommand: (args: string[], source: string) => void,
): Promise<{ stop(): void }> {
  const watcher = new Redis(REDIS_URL, { monitor: true, lazyConnect: true });
  watcher.on("error", () => {});
  watcher.on("monitor", (_time: string, args: string[], source: string) =>
    onCommand(args.map(String), source),
  );
  const monitoring = new Promise((resolve) => watcher.once("monitoring", resolve));
  await watcher.connect();
  await monitoring;
  return { stop: () => watcher.disconnect() };
}
