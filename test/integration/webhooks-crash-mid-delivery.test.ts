import { afterAll, expect, it } from "vitest";
import {
  call,
  dropPrefix,
  fundedAccount,
  spawnGateway,
  uniquePrefix,
  type GatewayProcess,
} from "../helpers/gateway.js";
import { startReceiver } from "../helpers/receiver.js";

/**
 * A delivery is under way (the receiver has the request and has not answered) when its gateway
 * is SIGKILLed, and again on the next gateway, which took the delivery over: a crash-looping
 * deployment. The event must still arrive once a gateway lives long enough to send it.
 */
const prefix = uniquePrefix("midhook");
let rx: Awaited<ReturnType<typeof startReceiver>> | undefined;
const gateways: GatewayProcess[] = [];
afterAll(async () => {
  for (const gw of gateways) await gw.stop("SIGKILL");
  await rx?.stop();
  await dropPrefix(prefix);
});

const start = async () => {
  const gw = await spawnGateway(prefix, { WEBHOOK_ALLOW_PRIVATE_TARGETS: "1" });
  gateways.push(gw);
  return gw;
};

it("delivers an event whose delivery was cut off by two gateway crashes in a row", async () => {
  rx = await startReceiver();
  const path = "/mid-delivery";
  const receiver = rx;
  receiver.script(path, ["hang"]); // each attempt stays in flight until its gateway dies
  const first = await start();
  const { key } = await fundedAccount(first.url, 100, "pro");
  const hook = await call(`${first.url}/api/v1/webhooks/register`, {
    key,
    body: { url: receiver.url(path), events: ["credits.low"] },
  });
  expect(hook.status).toBe(201);
  const sent = await call(`${first.url}/api/v1/webhooks/test`, { key, body: {} });
  const eventId = sent.body.sent[0].event_id as string;
  const attempts = () => receiver.at(path).filter((r) => r.headers["x-webhook-id"] === eventId);
  const until = async (n: number, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (attempts().length < n && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect(attempts().length).toBeGreaterThanOrEqual(n);
  };

  await until(1, 10_000);
  await first.stop("SIGKILL");
  // The next gateway takes the delivery over once the dead one's lock has run out, and dies in it too.
  const second = await start();
  await until(2, 60_000);
  await second.stop("SIGKILL");

  receiver.script(path, [200]);
  await start();
  await until(3, 90_000);
}, 240_000);
