import { expect, it } from "vitest";
import { freshDatabase } from "../helpers/postgres.js";
import { measureRetainedBytes } from "../helpers/redis-bytes.js";

/**
 * What a keyed call leaves in Redis, on a Redis of its own (test/helpers/redis-bytes.ts): with
 * the books exported to PostgreSQL, a call leaves its debit record (a field of a few bytes in its
 * account's hash of the call's 30-second slot, kept a day) and a count in its account's
 * per-second rate window (a hash of at most 61 fields, gone after a minute), so the summed
 * MEMORY USAGE of every key grows by about 22 bytes a call. The bound is the books issue's 64
 * bytes: a key of its own per call (what the debit records were), or a sorted-set member per call
 * in the rate window, costs more than that by itself (about 75 and 120 bytes), so either coming
 * back fails the test. INFO memory's used_memory is printed beside it (allocator and buffers
 * move it by a few kilobytes either way: not a figure to hold to bytes). Without the books
 * (DATABASE_URL=none) the ledger stream keeps every entry, for comparison.
 */
const CALLS = 800;

it("leaves at most 64 bytes in Redis per keyed call once the books are exported", async () => {
  const [exported, inRedis] = await Promise.all([
    freshDatabase().then((databaseUrl) => measureRetainedBytes({ calls: CALLS, databaseUrl })),
    measureRetainedBytes({ calls: CALLS, databaseUrl: "none" }),
  ]);
  const line = (r: typeof exported) =>
    `${r.perCall.toFixed(1)} B/call (used_memory ${r.usedMemoryPerCall.toFixed(1)} B/call) ${JSON.stringify(r.byKind)}`;
  process.stdout.write(
    `Redis bytes retained per keyed call (${CALLS} calls, Σ MEMORY USAGE of every key of a private Redis):\n` +
      `  books exported to PostgreSQL:         ${line(exported)}\n` +
      `  books kept in Redis (DATABASE_URL=none): ${line(inRedis)}\n`,
  );
  expect(exported.calls).toBe(CALLS);
  expect(exported.perCall).toBeLessThanOrEqual(64);
  // Nothing of the ledger stays once exported; the debit records are the bulk of what does.
  expect(exported.byKind.ledger ?? 0).toBeLessThanOrEqual(0);
  expect(exported.byKind.debits).toBeGreaterThan(0);
  expect(inRedis.byKind.ledger).toBeGreaterThan(64);
}, 180_000);
