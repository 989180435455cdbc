import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sealSecret } from "../../src/webhooks/secrets.js";
import {
  call,
  dropPrefix,
  fundedAccount,
  signUp,
  spawnGatewayPair,
  startGateway,
  uniquePrefix,
  type GatewayProcess,
  type TestGateway,
} from "../helpers/gateway.js";
import { startReceiver } from "../helpers/receiver.js";

/**
 * One deployment, one secret: two gateway processes on one Redis, neither given SECRET_KEY
 * (development), open each other's webhook secrets and verification links. A delivery that
 * fails on our side is logged, counted and retried without using the receiver's retries.
 */
let rx: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  rx = await startReceiver();
});
afterAll(() => rx.stop());

describe("two gateway processes without SECRET_KEY on one Redis", () => {
  const prefix = uniquePrefix("onesecret");
  let a: GatewayProcess;
  let b: GatewayProcess;
  beforeAll(async () => {
    const env = {
      SECRET_KEY: undefined,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "1",
      ENDPOINT_LIMITS: "webhook-test=100/60",
    };
    [a, b] = await spawnGatewayPair(prefix, env);
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await dropPrefix(prefix);
  });

  it("deliver every event, emitted through either, exactly once and on the first attempt", async () => {
    const path = "/both";
    const { key } = await fundedAccount(a.url, 100, "pro");
    const hook = await call(`${a.url}/api/v1/webhooks/register`, {
      key,
      body: { url: rx.url(path), events: ["tool.error"] },
    });
    expect(hook.status).toBe(201);
    const emitted: string[] = [];
    const emit = async (url: string) => {
      const res = await call(`${url}/api/v1/webhooks/test`, { key, body: {} });
      expect(res.status).toBe(202);
      emitted.push(res.body.sent[0].event_id);
    };
    for (let i = 0; i < 20; i++) await Promise.all([emit(a.url), emit(b.url)]);

    await rx.waitFor(path, emitted.length, 30_000);
    await new Promise((r) => setTimeout(r, 2000)); // a retry would come 1 s after a failure
    const got = rx.at(path);
    expect(got.map((r) => r.headers["x-webhook-id"]).sort()).toEqual([...emitted].sort());
    for (const r of got)
      expect(r.headers["x-webhook-signature"]).toBe(
        `sha256=${createHmac("sha256", hook.body.secret).update(r.raw).digest("hex")}`,
      );
    const log = await call(`${b.url}/api/v1/webhooks/${hook.body.id}/deliveries?limit=500`, {
      key,
    });
    expect(log.body.data).toHaveLength(emitted.length);
    expect(
      log.body.data.every(
        (d: { attempt: number; outcome: string }) => d.attempt === 1 && d.outcome === "delivered",
      ),
    ).toBe(true);
  }, 90_000);

  it("accept on one process the verification link e-mailed by the other", async () => {
    const { accountId } = await signUp(a.url);
    const deadline = Date.now() + 5000;
    let line: string | undefined;
    while (
      !(line = a.output.find((l) => l.includes(accountId) && l.includes("verify-email?token="))) &&
      Date.now() < deadline
    )
      await new Promise((r) => setTimeout(r, 50));
    const token = decodeURIComponent(/verify-email\?token=([^\s"\\]+)/.exec(line ?? "")?.[1] ?? "");
    expect(token).not.toBe("");
    const verified = await call(`${b.url}/api/v1/verify-email?token=${encodeURIComponent(token)}`);
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({ account_id: accountId, credits_added: 75 });
  });
});

describe("a delivery that fails on our side", () => {
  let gw: TestGateway;
  const secretKey = "n".repeat(32);
  const prefix = uniquePrefix("oursfail");
  const env = { SECRET_KEY: secretKey, WEBHOOK_ALLOW_PRIVATE_TARGETS: "1" };
  beforeAll(async () => {
    gw = await startGateway({ prefix, env });
  });
  afterAll(async () => {
    await gw?.stop();
    await dropPrefix(prefix);
  });

  it("is logged, counted and retried without using the receiver's retries, and arrives on its first attempt once the key is back", async () => {
    const path = "/ours";
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const hook = await call(`${gw.url}/api/v1/webhooks/register`, {
      key,
      body: { url: rx.url(path), events: ["tool.error"] },
    });
    // The secret was sealed with a key this deployment no longer has (SECRET_KEY replaced without keeping the old one).
    const accountId = (await call(`${gw.url}/api/v1/account`, { key })).body.id;
    const oldKey = "o".repeat(32);
    await gw.services.store.rotateWebhookSecret(accountId, hook.body.id, {
      sealedSecret: sealSecret([oldKey], hook.body.secret),
      overlapMs: 0,
      now: Date.now(),
    });

    const sent = await call(`${gw.url}/api/v1/webhooks/test`, { key, body: {} });
    const eventId = sent.body.sent[0].event_id;
    // Tried at once, 1 s and 3 s later: each time nothing was sent, so none counts as an attempt.
    await new Promise((r) => setTimeout(r, 3500));
    expect(rx.at(path)).toHaveLength(0);
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(
      Number(/^toolgate_webhook_internal_errors_total (\d+)/m.exec(metrics)?.[1]),
    ).toBeGreaterThanOrEqual(2);
    const failures = (await call(`${gw.url}/api/v1/webhooks/${hook.body.id}/deliveries`, { key }))
      .body.data;
    expect(failures.length).toBeGreaterThanOrEqual(2);
    for (const f of failures) {
      expect(f).toMatchObject({ event_id: eventId, attempt: 1, status: null, outcome: "retrying" });
      expect(f.error).toMatch(
        /^not sent \(internal error\): the webhook secret was sealed with a key that is not in SECRET_KEY/,
      );
    }

    // The operator restarts with the old key back behind the new one (SECRET_KEY="new,old"): the
    // next try, made by the new process from the shared queue, is delivered, as attempt 1.
    await gw.stop();
    gw = await startGateway({ prefix, env: { ...env, SECRET_KEY: `${secretKey},${oldKey}` } });
    const got = await rx.waitForBody(path, (body) => body.id === eventId, 15_000);
    expect(got).toBeDefined();
    expect(got!.headers["x-webhook-signature"]).toBe(
      `sha256=${createHmac("sha256", hook.body.secret).update(got!.raw).digest("hex")}`,
    );
    const last = (await call(`${gw.url}/api/v1/webhooks/${hook.body.id}/deliveries`, { key })).body
      .data[0];
    expect(last).toMatchObject({
      event_id: eventId,
      attempt: 1,
      outcome: "delivered",
      status: 200,
    });
  }, 60_000);
});
