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
import { startReceiver } from "../helpers/receiver.js";

/**
 * Deliveries live in Redis (BullMQ and the outboxes), not in a process: a gateway killed with
 * deliveries queued and retrying loses none of them, and the next process sends each event
 * with its original id.
 */
const prefix = uniquePrefix("durable");
let rx: Awaited<ReturnType<typeof startReceiver>>;
let first: GatewayProcess;
let second: GatewayProcess | undefined;
beforeAll(async () => {
  rx = await startReceiver();
  first = await spawnGateway(prefix, { WEBHOOK_ALLOW_PRIVATE_TARGETS: "1" });
});
afterAll(async () => {
  await first.stop("SIGKILL");
  await second?.stop();
  await rx.stop();
  await dropPrefix(prefix);
});

describe("a gateway killed with deliveries pending", () => {
  it("loses no event: after a restart every event arrives, ids unchanged", async () => {
    const path = "/durable";
    rx.script(path, [500]); // the receiver is down: every delivery waits for a retry
    const { key } = await fundedAccount(first.url, 25, "pro");
    const hook = await call(`${first.url}/api/v1/webhooks/register`, {
      key,
      body: { url: rx.url(path), events: ["credits.low", "credits.depleted"] },
    });
    expect(hook.status).toBe(201);
    const testEvents: string[] = [];
    for (let i = 0; i < 5; i++)
      testEvents.push(
        (await call(`${first.url}/api/v1/webhooks/test`, { key, body: {} })).body.sent[0].event_id,
      );
    for (let i = 0; i < 25; i++)
      expect((await callTool(first.url, key, "hash", { text: String(i) })).status).toBe(200);

    // Every event has been tried once and failed; now the process dies mid-schedule.
    const seen = () => new Set(rx.at(path).map((r) => r.headers["x-webhook-id"] as string));
    const deadline = Date.now() + 5000;
    while (seen().size < 7 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    expect(seen().size).toBe(7);
    await new Promise((r) => setTimeout(r, 300));
    await first.stop("SIGKILL");
    const killedAt = Date.now();
    const bodiesBefore = new Map(
      rx.at(path).map((r) => [r.headers["x-webhook-id"] as string, r.raw]),
    );

    rx.script(path, [200]);
    second = await spawnGateway(prefix, { WEBHOOK_ALLOW_PRIVATE_TARGETS: "1" });
    const deliveredAfterRestart = () =>
      new Map(
        rx
          .at(path)
          .filter((r) => r.at > killedAt)
          .map((r) => [r.headers["x-webhook-id"] as string, r.raw]),
      );
    const until = Date.now() + 30_000;
    while (deliveredAfterRestart().size < 7 && Date.now() < until)
      await new Promise((r) => setTimeout(r, 100));
    const delivered = deliveredAfterRestart();
    // Every event arrived again after the restart, with the same id and the same bytes.
    expect([...delivered.keys()].sort()).toEqual([...bodiesBefore.keys()].sort());
    for (const [id, raw] of delivered) expect(raw).toBe(bodiesBefore.get(id));
    expect(testEvents.every((id) => delivered.has(id))).toBe(true);
    const kinds = [...delivered.values()].map((raw) => JSON.parse(raw).event).sort();
    expect(kinds).toEqual(["credits.depleted", "credits.low", ...Array(5).fill("webhook.test")]);
  }, 60_000);
});
