import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  balanceOf,
  call,
  callTool,
  fundedAccount,
  spawnGateway,
  uniquePrefix,
  type GatewayProcess,
} from "../helpers/gateway.js";
import { startRedisCluster } from "../helpers/redis-server.js";

/**
 * One master of a real three-master Redis Cluster (no replicas) goes down and comes back: what a
 * caller and an operator see meanwhile. Its own file: the outage would disturb other tests.
 */
type Account = Awaited<ReturnType<typeof fundedAccount>>;
let cluster: Awaited<ReturnType<typeof startRedisCluster>>;
let gw: GatewayProcess;
beforeAll(async () => {
  cluster = await startRedisCluster({ durable: true });
  gw = await spawnGateway(uniquePrefix("cluster-outage"), {
    REDIS_URL: cluster.url,
    REDIS_CLUSTER: "1",
  });
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  await cluster?.stop();
});

describe("a Redis Cluster master down", () => {
  it("is 503 store_unavailable to the callers whose slots it served and to /readyz, never a 500; once back, each is served, charged once", async () => {
    // Accounts on each side: two whose slot the second master serves (5462-10923), two others.
    const node = new Redis(cluster.url);
    const onSecond = async (accountId: string) => {
      const slot = Number(await node.call("CLUSTER", "KEYSLOT", `{${accountId}}`));
      return slot >= 5462 && slot <= 10923;
    };
    const sides = { true: [] as Account[], false: [] as Account[] };
    while (sides.true.length < 2 || sides.false.length < 2) {
      const account = await fundedAccount(gw.url, 100);
      const side = sides[String(await onSecond(account.accountId)) as "true" | "false"];
      if (side.length < 2) side.push(account);
    }
    const accounts = [...sides.true, ...sides.false];
    node.disconnect();
    for (const { key } of accounts)
      expect((await callTool(gw.url, key, "hash", { text: "a" })).status).toBe(200);
    expect((await call(`${gw.url}/readyz`)).status).toBe(200);

    await cluster.kill(1);
    const during = await Promise.all(
      accounts.map(({ key }) => callTool(gw.url, key, "hash", { text: "b" })),
    );
    // Exactly the accounts on the dead master are refused, as a retryable 503.
    expect(during.map((r) => [r.status, r.body.error?.code])).toEqual(
      accounts.map((_, i) => (i < 2 ? [503, "store_unavailable"] : [200, undefined])),
    );
    const ready = await call(`${gw.url}/readyz`);
    expect([ready.status, ready.body]).toEqual([
      503,
      { status: "unavailable", store: "unreachable" },
    ]);

    await cluster.restart(1);
    const deadline = Date.now() + 30_000;
    while ((await call(`${gw.url}/readyz`)).status !== 200) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 250));
    }
    for (const [i, { key }] of accounts.entries()) {
      // A caller retries a 503: the first command on a reconnecting node may still fail.
      let after = await callTool(gw.url, key, "hash", { text: "c" });
      while (after.status === 503 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 250));
        after = await callTool(gw.url, key, "hash", { text: "c" });
      }
      expect([i, after.status]).toEqual([i, 200]);
      // One charge for each call that was served, none for a refused one.
      expect(await balanceOf(gw.url, key)).toBe(100 - 2 - (during[i]!.status === 200 ? 1 : 0));
    }
  }, 90_000);
});
