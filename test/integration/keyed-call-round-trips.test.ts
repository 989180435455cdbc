import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { callTool, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";
import { REDIS_URL } from "../helpers/redis.js";

/**
 * The hot path's promise, observed on the wire with MONITOR: a keyed tool call is one round trip
 * to Redis (one script: key check, last use, rate limit, debit), and the key's `last_used_at` is
 * written inside that script, at most once a minute.
 */
let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(() => gw.stop());

it("makes one Redis round trip per keyed call, writing last_used_at inside it once a minute", async () => {
  const { key, accountId } = await fundedAccount(gw.url, 100, "pro");
  // The first call loads the script into Redis (EVALSHA, then EVAL once) and first writes last_used_at.
  expect((await callTool(gw.url, key, "hash", { text: "warm-up" })).status).toBe(200);
  // Let the relay hand on the sign-up's events first: its work is not the calls'.
  while ((await gw.services.store.readOutbox(accountId, 10)).length > 0)
    await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, 500));
  const tag = `{${accountId}}`;
  const monitor = new Redis(REDIS_URL);
  const fromGateway: string[] = [];
  const inScripts: string[][] = [];
  const feed = await monitor.monitor();
  feed.on("monitor", (_time: string, args: string[], source: string) => {
    if (!args.some((a) => String(a).includes(tag))) return;
    if (source === "lua") inScripts.push(args.map(String));
    else fromGateway.push(String(args[0]).toLowerCase());
  });
  try {
    await new Promise((r) => setTimeout(r, 100));
    const calls = 10;
    for (let i = 0; i < calls; i++)
      expect((await callTool(gw.url, key, "hash", { text: `t${i}` })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 200));
    expect(fromGateway).toEqual(Array(calls).fill("evalsha"));
    const lastUsedWrites = inScripts.filter(
      (args) => args[0]!.toLowerCase() === "hset" && args.includes("last_used_at"),
    );
    // The warm-up call wrote it before the monitor started: none of these calls, within the minute, rewrites it.
    expect(lastUsedWrites).toEqual([]);
  } finally {
    feed.disconnect();
    monitor.disconnect();
  }
});
