import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  callTool,
  dropPrefix,
  fundedAccount,
  spawnGateway,
  uniquePrefix,
  type GatewayProcess,
} from "../helpers/gateway.js";
import { REDIS_URL } from "../helpers/redis.js";
import { startReceiver } from "../helpers/receiver.js";

/**
 * The relay reads many accounts' outboxes in one request (webhooks/relay.ts): an account whose
 * outbox holds an event that fails validation must hold up only itself, never the accounts read
 * beside it.
 */
const prefix = uniquePrefix("relayiso");
let rx: Awaited<ReturnType<typeof startReceiver>>;
let gw: GatewayProcess;
const redis = new Redis(REDIS_URL, { keyPrefix: prefix });
beforeAll(async () => {
  rx = await startReceiver();
  gw = await spawnGateway(prefix, { WEBHOOK_ALLOW_PRIVATE_TARGETS: "1" });
});
afterAll(async () => {
  await gw?.stop();
  await rx?.stop();
  await dropPrefix(prefix);
  redis.disconnect();
});

describe("the relay beside an unreadable outbox", () => {
  it("delivers every other account's events while one account's outbox cannot be read", async () => {
    // An outbox whose only event is not an event Toolgate knows, indexed for the relay.
    const poisoned = "acct_unreadableoutbox";
    await redis.xadd(`{${poisoned}}:outbox`, "*", "id", "evt_x", "event", "no.such.event");
    await redis.sadd("outbox:accounts", poisoned);

    const { key } = await fundedAccount(gw.url, 25, "pro");
    const path = "/isolated";
    const hook = await call(`${gw.url}/api/v1/webhooks/register`, {
      key,
      body: { url: rx.url(path), events: ["credits.depleted"] },
    });
    expect(hook.status).toBe(201);
    for (let i = 0; i < 25; i++)
      expect((await callTool(gw.url, key, "hash", { text: String(i) })).status).toBe(200);

    const deadline = Date.now() + 10_000;
    while (rx.at(path).length === 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 25));
    expect(rx.at(path).map((r) => JSON.parse(r.raw).event)).toEqual(["credits.depleted"]);
    // The unreadable outbox is left as it was, still indexed: nothing of it was lost or skipped.
    expect(await redis.xlen(`{${poisoned}}:outbox`)).toBe(1);
    expect(await redis.sismember("outbox:accounts", poisoned)).toBe(1);
  });
});
