import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  callTool,
  fundedAccount,
  signUp,
  spawnGatewayPair,
  uniquePrefix,
  type GatewayProcess,
} from "../helpers/gateway.js";
import { startReceiver } from "../helpers/receiver.js";
import { startRedisCluster } from "../helpers/redis-server.js";

/**
 * Two gateway processes on a real three-master Redis Cluster (REDIS_CLUSTER=1): the store's
 * scripts, the rate limit and BullMQ's webhook queue each stay inside one slot, or they fail here.
 */
let cluster: Awaited<ReturnType<typeof startRedisCluster>>;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let a: GatewayProcess;
let b: GatewayProcess;
beforeAll(async () => {
  [cluster, rx] = await Promise.all([startRedisCluster(), startReceiver()]);
  const env = { REDIS_URL: cluster.url, REDIS_CLUSTER: "1", WEBHOOK_ALLOW_PRIVATE_TARGETS: "1" };
  const prefix = uniquePrefix("cluster");
  [a, b] = await spawnGatewayPair(prefix, env);
}, 60_000);
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await rx?.stop();
  await cluster?.stop();
});

describe("on a Redis Cluster", () => {
  it("debits exactly the balance under concurrent calls through both processes", async () => {
    const { key } = await fundedAccount(a.url, 40, "business");
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        callTool(i % 2 ? a.url : b.url, key, "hash", { text: `c${i}` }),
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(40);
    expect(
      results
        .filter((r) => r.status === 402)
        .every((r) => r.body.error.code === "insufficient_credits"),
    ).toBe(true);
    expect((await call(`${b.url}/api/v1/account`, { key })).body.credits).toBe(0);
  });

  it("signs up, revokes a key on one process and refuses it on the other", async () => {
    const { key, keyId } = await signUp(a.url);
    expect((await call(`${b.url}/api/v1/account`, { key })).body.credits).toBe(25);
    expect(
      (await call(`${b.url}/api/v1/keys/${keyId}?force=true`, { key, method: "DELETE" })).status,
    ).toBe(200);
    expect((await call(`${a.url}/api/v1/account`, { key })).body.error.code).toBe(
      "api_key_revoked",
    );
  });

  it("delivers a webhook through the queue", async () => {
    const { key } = await fundedAccount(a.url, 100, "pro");
    const hook = await call(`${a.url}/api/v1/webhooks/register`, {
      key,
      body: { url: rx.url("/cluster"), events: ["tool.error"] },
    });
    expect(hook.status).toBe(201);
    expect(
      (await call(`${b.url}/api/v1/webhooks/test`, { key, body: { webhook_id: hook.body.id } }))
        .status,
    ).toBe(202);
    const [delivery] = await rx.waitFor("/cluster", 1);
    expect(JSON.parse(delivery!.raw)).toMatchObject({ event: "webhook.test" });
    expect(delivery!.headers["x-webhook-signature"]).toBeTruthy();
  });
});
