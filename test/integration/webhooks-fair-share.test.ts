import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";
import { startReceiver } from "../helpers/receiver.js";

/**
 * A gateway process delivers 32 webhooks at once, and a receiver that never answers holds its
 * delivery for the 10 s timeout. One account whose webhooks never answer must not hold every
 * delivery of the process: each owner has at most 8 in flight, and another account's delivery
 * goes out at once.
 */
let gw: TestGateway;
let rx: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  rx = await startReceiver();
  gw = await startGateway({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "1" } });
});
afterAll(async () => {
  await gw?.stop();
  await rx?.stop();
});

const register = (key: string, path: string) =>
  call(`${gw.url}/api/v1/webhooks/register`, {
    key,
    body: { url: rx.url(path), events: ["tool.error"] },
  });
const sendTest = (key: string) => call(`${gw.url}/api/v1/webhooks/test`, { key, body: {} });

describe("webhook deliveries shared between accounts", () => {
  it("one account's 40 unanswered deliveries do not hold up another account's: it is delivered at once", async () => {
    const noisy = await fundedAccount(gw.url, 100, "pro");
    for (let i = 0; i < 10; i++) {
      rx.script(`/silent-${i}`, ["hang"]);
      expect((await register(noisy.key, `/silent-${i}`)).status).toBe(201);
    }
    for (let i = 0; i < 4; i++) expect((await sendTest(noisy.key)).status).toBe(202);
    // More of its deliveries than the process delivers at once have reached the receiver or wait.
    await rx.waitFor("/silent-0", 1, 5000);
    await new Promise((r) => setTimeout(r, 300));

    const quiet = await fundedAccount(gw.url, 100, "pro");
    expect((await register(quiet.key, "/quiet")).status).toBe(201);
    const sent = Date.now();
    expect((await sendTest(quiet.key)).status).toBe(202);
    const [delivered] = await rx.waitFor("/quiet", 1, 15_000);
    // Before each owner had a share, it waited for the noisy account's 10 s timeouts.
    expect(delivered!.at - sent).toBeLessThan(3000);
    // The noisy account's deliveries still went out, up to its share at once (each hangs for its
    // 10 s timeout: the count holds still meanwhile, once the last of the share has arrived).
    const silentOnes = () => rx.received.filter((r) => r.path.startsWith("/silent-"));
    for (const deadline = Date.now() + 5000; silentOnes().length < 8 && Date.now() < deadline; )
      await new Promise((r) => setTimeout(r, 50));
    const silent = silentOnes();
    expect(silent.length).toBeGreaterThanOrEqual(8);
    expect(silent.length).toBeLessThanOrEqual(8 + 2);
    // Deleted, its deliveries still queued are dropped (and those in flight end at their timeout).
    for (const hook of (await call(`${gw.url}/api/v1/webhooks`, { key: noisy.key })).body.data)
      await call(`${gw.url}/api/v1/webhooks/${hook.id}`, { key: noisy.key, method: "DELETE" });
  }, 30_000);

  it("an account's failing receivers do not hold up its working ones: each has a share of its own", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    for (let i = 0; i < 8; i++) {
      rx.script(`/failing-${i}`, ["hang"]);
      expect((await register(key, `/failing-${i}`)).status).toBe(201);
    }
    expect((await sendTest(key)).status).toBe(202);
    // Past the 10 s timeout, the eight failed; their retries (1 s later) are out, and hang again.
    for (let i = 0; i < 8; i++) await rx.waitFor(`/failing-${i}`, 2, 20_000);
    const working: string[] = [];
    for (let i = 0; i < 2; i++) {
      const hook = await register(key, `/working-${i}`);
      expect(hook.status).toBe(201);
      working.push(hook.body.id);
    }
    const sent = Date.now();
    for (const id of working)
      expect(
        (await call(`${gw.url}/api/v1/webhooks/test`, { key, body: { webhook_id: id } })).status,
      ).toBe(202);
    const arrived = await Promise.all(
      working.map((_, i) => rx.waitFor(`/working-${i}`, 1, 20_000).then((r) => r[0]!.at - sent)),
    );
    // With one share for both, they waited behind the failing receivers' retries (20–40 s in a probe).
    expect(Math.max(...arrived)).toBeLessThan(3000);
  }, 45_000);
});
