import { afterAll, beforeAll, expect, it } from "vitest";
import { callTool, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";
import { freshDatabase, sql } from "../helpers/postgres.js";
import { watchRedisCommands } from "../helpers/redis.js";

/**
 * Request records cost the hot path nothing in Redis: with the books on (PostgreSQL, the exporter
 * running), every Redis command the gateway sends about an account during its keyed calls is the
 * call's one admission script, or the exporter's work (looking at the account's ledger stream and
 * event log, reading and trimming what it exported: per pass and batch, not per call) — observed
 * with MONITOR. Each call's request record
 * then holds its time, tool, key, status, latency and credits. The test prints the commands per
 * call it counted.
 */
let gw: TestGateway;
let database: string;
beforeAll(async () => {
  database = await freshDatabase();
  gw = await startGateway({
    env: { DATABASE_URL: database, BOOKS_EXPORT_INTERVAL_MS: "200", BOOKS_EXPORT_BATCH: "500" },
  });
});
afterAll(() => gw?.stop());

it("adds no Redis command to a keyed call, and records each call's status, latency and credits", async () => {
  const { key, keyId, accountId } = await fundedAccount(gw.url, 500, "pro");
  // Warm-up: the admission and refund scripts are loaded into Redis (EVALSHA, then EVAL once).
  expect((await callTool(gw.url, key, "hash", { text: "warm-up" })).status).toBe(200);
  expect((await callTool(gw.url, key, "regex-test", { pattern: "(", text: "x" })).status).toBe(422);
  while ((await gw.services.store.readOutbox(accountId, 10)).length > 0)
    await new Promise((r) => setTimeout(r, 50));
  const tag = `{${accountId}}`;
  const commands: string[] = [];
  const watch = await watchRedisCommands((args, source) => {
    if (source !== "lua" && args.some((a) => a.includes(tag)))
      commands.push(args[0]!.toLowerCase());
  });
  const calls = 100;
  const statuses: number[] = [];
  try {
    await new Promise((r) => setTimeout(r, 100));
    for (let i = 0; i < calls; i++) {
      const ok = i % 10 !== 9;
      const res = ok
        ? await callTool(gw.url, key, "hash", { text: `t${i}` })
        : await callTool(gw.url, key, "regex-test", { pattern: "(", text: "x" });
      statuses.push(res.status);
    }
    await new Promise((r) => setTimeout(r, 600)); // the exporter's next passes
  } finally {
    watch.stop();
  }
  const count = (name: string) => commands.filter((c) => c === name).length;
  const failed = statuses.filter((s) => s !== 200).length;
  // One script per call (admission), and one more per failed call (its refund: that step is the
  // failure's own, with or without the books).
  expect(count("evalsha")).toBe(calls + failed);
  const exporter = commands.filter((c) => c !== "evalsha");
  // The exporter's per-pass look at the account's ledger stream and event log, and its batches.
  const exporterWork = ["xrange", "xtrim", "zrange", "zrangebyscore", "zrem"];
  expect(exporter.filter((c) => !exporterWork.includes(c))).toEqual([]);
  process.stdout.write(
    `request records, Redis commands per keyed call (${calls} calls, ${failed} failed): admission ${(calls / calls).toFixed(2)}, refunds ${(failed / calls).toFixed(2)}, exporter ${(exporter.length / calls).toFixed(2)} (per batch, not per call: ${exporter.length} in all)\n`,
  );

  for (const deadline = Date.now() + 20_000; ; await new Promise((r) => setTimeout(r, 100))) {
    const [row] = await sql<{ n: number }>(
      database,
      "SELECT count(*)::int AS n FROM request_records WHERE account_id = $1 AND latency_ms IS NOT NULL AND charged > 0 AND refunded = (charged - credits)",
      [accountId],
    );
    if (row!.n === calls + 2) break;
    if (Date.now() > deadline) throw new Error(`only ${row!.n} request records were complete`);
  }
  const rows = await sql<{
    tool: string;
    key_id: string;
    status: number;
    outcome: string;
    credits: number;
  }>(
    database,
    "SELECT tool, key_id, status, outcome, credits::int AS credits FROM request_records WHERE account_id = $1",
    [accountId],
  );
  const sorted = <T>(list: T[]) => list.map((r) => JSON.stringify(r)).sort();
  expect(sorted(rows)).toEqual(
    sorted(
      [200, 422, ...statuses].map((status) =>
        status === 200
          ? { tool: "hash", key_id: keyId, status: 200, outcome: "ok", credits: 1 }
          : {
              tool: "regex-test",
              key_id: keyId,
              status: 422,
              outcome: "validation_failed",
              credits: 0,
            },
      ),
    ),
  );
}, 60_000);
