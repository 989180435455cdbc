import { afterAll, beforeAll, expect, it } from "vitest";
import {
  call,
  callTool,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";
import { watchRedisCommands } from "../helpers/redis.js";

/**
 * The hot path's promise, observed on the wire with MONITOR: a keyed tool call is one round trip
 * to Redis (one script: key check, account controls, last use, rate limit, debit), and the key's
 * `last_used_at` is written inside that script, at most once a minute.
 */
let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(() => gw.stop());

/**
 * The Redis commands touching the account while `work` runs: those the gateway sent, and those
 * its scripts ran. The relay's work on events already written (sign-up, alerts) is let finish first.
 */
async function commandsDuring(
  accountId: string,
  work: () => Promise<void>,
): Promise<{ fromGateway: string[]; inScripts: string[][] }> {
  while ((await gw.services.store.readOutbox(accountId, 10)).length > 0)
    await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, 500));
  const tag = `{${accountId}}`;
  const fromGateway: string[] = [];
  const inScripts: string[][] = [];
  const watch = await watchRedisCommands((args, source) => {
    if (!args.some((a) => a.includes(tag))) return;
    if (source === "lua") inScripts.push(args);
    else fromGateway.push(args[0]!.toLowerCase());
  });
  try {
    await new Promise((r) => setTimeout(r, 100));
    await work();
    await new Promise((r) => setTimeout(r, 200));
    return { fromGateway, inScripts };
  } finally {
    watch.stop();
  }
}

it("makes one Redis round trip per keyed call, writing last_used_at inside it once a minute", async () => {
  const { key, accountId } = await fundedAccount(gw.url, 100, "pro");
  // The first call loads the script into Redis (EVALSHA, then EVAL once) and first writes last_used_at.
  expect((await callTool(gw.url, key, "hash", { text: "warm-up" })).status).toBe(200);
  const calls = 10;
  const { fromGateway, inScripts } = await commandsDuring(accountId, async () => {
    for (let i = 0; i < calls; i++)
      expect((await callTool(gw.url, key, "hash", { text: `t${i}` })).status).toBe(200);
  });
  expect(fromGateway).toEqual(Array(calls).fill("evalsha"));
  const lastUsedWrites = inScripts.filter(
    (args) => args[0]!.toLowerCase() === "hset" && args.includes("last_used_at"),
  );
  // The warm-up call wrote it before the monitor started: none of these calls, within the minute, rewrites it.
  expect(lastUsedWrites).toEqual([]);
});

it("stays one Redis round trip per keyed call with every account control on: expiry, allowed tools, budget, spend alert — and a budget refusal too", async () => {
  const { key, accountId } = await fundedAccount(gw.url, 100, "pro");
  const created = await call(`${gw.url}/api/v1/keys`, {
    key,
    body: {
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      allowed_tools: ["hash"],
      budget: { credits: 10, period: "day" },
    },
  });
  expect(created.status).toBe(201);
  const limited = created.body.key as string;
  const alert = await call(`${gw.url}/api/v1/account/spend-alert`, {
    key,
    method: "PUT",
    body: { credits: 1 },
  });
  expect(alert.status).toBe(200);
  // The alert fires on the warm-up call (its delivery is the relay's work, not the calls'); the
  // calls below still pass through its check.
  expect((await callTool(gw.url, limited, "hash", { text: "warm-up" })).status).toBe(200);
  const statuses: number[] = [];
  const { fromGateway } = await commandsDuring(accountId, async () => {
    // 9 served (the budget of 10, less the warm-up), then 1 refused for the budget.
    for (let i = 0; i < 10; i++)
      statuses.push((await callTool(gw.url, limited, "hash", { text: `t${i}` })).status);
  });
  expect(statuses).toEqual([...Array(9).fill(200), 402]);
  expect(fromGateway).toEqual(Array(10).fill("evalsha"));
});
