import { execFileSync } from "node:child_process";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ADMIN_KEY,
  admin,
  call,
  callTool,
  fundedAccount,
  signUp,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";
import { startReceiver } from "../helpers/receiver.js";

let gw: TestGateway;
let rx: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  rx = await startReceiver();
  gw = await startGateway({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "1" } });
});
afterAll(async () => {
  await gw.stop();
  await rx.stop();
});

let paths = 0;
const uniquePath = (label: string) => `/${label}-${++paths}-${Date.now()}`;
const register = (key: string, body: unknown) =>
  call(`${gw.url}/api/v1/webhooks/register`, { key, body });
const sendTest = (key: string, webhookId?: string) =>
  call(`${gw.url}/api/v1/webhooks/test`, { key, body: webhookId ? { webhook_id: webhookId } : {} });
/** The webhook's delivery log once it holds `count` attempts (an attempt is logged just after its answer). */
async function deliveryLog(key: string, webhookId: string, count: number): Promise<any[]> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const log = (await call(`${gw.url}/api/v1/webhooks/${webhookId}/deliveries`, { key })).body
      .data;
    if (log.length >= count || Date.now() > deadline) return log;
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** HMAC-SHA256 by openssl, independent of the service's code. */
const opensslHmacHex = (key: string, data: string) =>
  execFileSync("openssl", ["dgst", "-sha256", "-hmac", key], { input: data })
    .toString()
    .trim()
    .split("= ")[1]!;
const opensslHmacBase64 = (hexKey: string, data: string) =>
  execFileSync(
    "openssl",
    ["dgst", "-sha256", "-binary", "-mac", "HMAC", "-macopt", `hexkey:${hexKey}`],
    { input: data },
  ).toString("base64");

/**
 * What the OpenAPI document's `webhooks` says a delivery of its event is, checked on one received
 * delivery with an independent validator: its body against the envelope schema, and every
 * documented header present and matching its schema. Answers the mismatches.
 */
async function undocumented(got: { headers: Record<string, unknown>; raw: string }) {
  const doc = (await call(`${gw.url}/openapi.json`)).body;
  const body = JSON.parse(got.raw);
  const delivery = doc.webhooks?.[body.event]?.post;
  if (!delivery) return [`no webhooks entry for ${body.event}`];
  const ajv = new Ajv2020({ strict: false });
  addFormats.default(ajv);
  const problems: string[] = [];
  const validBody = ajv.compile(delivery.requestBody.content["application/json"].schema);
  if (!validBody(body)) problems.push(`body: ${JSON.stringify(validBody.errors)}`);
  for (const header of delivery.parameters as { name: string; schema: object }[]) {
    const value = got.headers[header.name.toLowerCase()];
    if (!ajv.validate(header.schema, value)) problems.push(`${header.name}: ${String(value)}`);
  }
  return problems;
}

describe("registering webhooks", () => {
  it("returns the secret once; listing never shows it", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const res = await register(key, { url: rx.url("/r"), events: ["credits.low", "tool.error"] });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^wh_/),
      url: rx.url("/r"),
      events: ["credits.low", "tool.error"],
      created_at: expect.any(String),
      previous_secret_expires_at: null,
      secret: expect.stringMatching(/^whsec_/),
    });
    const list = await call(`${gw.url}/api/v1/webhooks`, { key });
    expect(list.body.data).toEqual([
      {
        id: res.body.id,
        url: rx.url("/r"),
        events: ["credits.low", "tool.error"],
        created_at: res.body.created_at,
        previous_secret_expires_at: null,
      },
    ]);
    expect(JSON.stringify(list.body)).not.toContain(res.body.secret);
  });

  it("is a Pro feature", async () => {
    for (const tier of ["free", "starter"]) {
      const { key } = await fundedAccount(gw.url, 100, tier);
      const res = await register(key, { url: rx.url("/x"), events: ["tool.error"] });
      expect([res.status, res.body.error.code, res.body.error.required_tier]).toEqual([
        403,
        "feature_not_in_tier",
        "pro",
      ]);
    }
  });

  it("refuses bad input, and caps webhooks per account", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    for (const [body, param] of [
      [{ url: rx.url("/x"), events: ["credits.stolen"] }, "events.0"],
      [{ url: rx.url("/x"), events: [] }, "events"],
      [{ url: rx.url("/x"), events: ["tool.error", "tool.error"] }, "events"],
      [{ url: rx.url("/x"), events: ["webhook.test"] }, "events.0"],
      // A platform event: an account's own fires when it is created, before any webhook.
      [{ url: rx.url("/x"), events: ["tool.error", "agent.registered"] }, "events.1"],
      [{ url: `http://localhost:${rx.port}/x`, events: ["tool.error"] }, "url"],
      [{ url: "not a url", events: ["tool.error"] }, "url"],
      [{ events: ["tool.error"] }, "url"],
    ] as const) {
      const res = await register(key, body);
      expect([JSON.stringify(body), res.status, res.body.error.param]).toEqual([
        JSON.stringify(body),
        422,
        param,
      ]);
    }
    for (let i = 0; i < 10; i++)
      expect(
        (await register(key, { url: rx.url(`/cap${i}`), events: ["tool.error"] })).status,
      ).toBe(201);
    expect((await register(key, { url: rx.url("/cap10"), events: ["tool.error"] })).status).toBe(
      422,
    );
  });

  it("keeps one account's webhooks from another: 404 on delete, test, rotate and deliveries", async () => {
    const a = await fundedAccount(gw.url, 100, "pro");
    const b = await fundedAccount(gw.url, 100, "pro");
    const hook = (await register(a.key, { url: rx.url("/mine"), events: ["tool.error"] })).body;
    for (const [method, path, body] of [
      ["DELETE", `/api/v1/webhooks/${hook.id}`, undefined],
      ["POST", "/api/v1/webhooks/test", { webhook_id: hook.id }],
      ["POST", `/api/v1/webhooks/${hook.id}/rotate-secret`, {}],
      ["GET", `/api/v1/webhooks/${hook.id}/deliveries`, undefined],
    ] as const) {
      const res = await call(`${gw.url}${path}`, { key: b.key, method, body });
      expect([path, res.status, res.body.error.code]).toEqual([path, 404, "not_found"]);
    }
    expect((await call(`${gw.url}/api/v1/webhooks`, { key: a.key })).body.data).toHaveLength(1);
    expect(
      (await call(`${gw.url}/api/v1/webhooks/${hook.id}`, { key: a.key, method: "DELETE" })).body,
    ).toEqual({ id: hook.id, deleted: true });
    // Deleting again is 404, the rule for every repeated DELETE (as for revoking a key twice).
    const again = await call(`${gw.url}/api/v1/webhooks/${hook.id}`, {
      key: a.key,
      method: "DELETE",
    });
    expect([again.status, again.body.error.code, again.body.error.param]).toEqual([
      404,
      "not_found",
      "id",
    ]);
  });
});

describe("deliveries", () => {
  it("carry the specified headers and a signature an independent HMAC verifies over the raw body", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const path = uniquePath("signed");
    const hook = (await register(key, { url: rx.url(path), events: ["tool.error"] })).body;
    const sent = (await sendTest(key, hook.id)).body.sent[0];
    const [got] = await rx.waitFor(path, 1);
    const body = JSON.parse(got!.raw);
    expect(body).toEqual({
      id: sent.event_id,
      event: "webhook.test",
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      data: { webhook_id: hook.id, message: expect.any(String) },
    });
    expect(got!.headers).toMatchObject({
      "content-type": "application/json",
      "user-agent": "Toolgate-Webhook/1.0",
      "x-webhook-id": body.id,
      "x-webhook-event": "webhook.test",
      "x-webhook-timestamp": body.timestamp,
      "webhook-id": body.id,
    });
    expect(got!.headers["x-webhook-signature"]).toBe(
      `sha256=${opensslHmacHex(hook.secret, got!.raw)}`,
    );
    const reserialised = JSON.stringify(JSON.parse(got!.raw), null, 2);
    expect(got!.headers["x-webhook-signature"]).not.toBe(
      `sha256=${opensslHmacHex(hook.secret, reserialised)}`,
    );
    // Standard Webhooks: v1,<base64 HMAC of "id.timestamp.body" keyed by the secret's bytes>.
    const keyHex = Buffer.from(hook.secret.slice("whsec_".length), "base64").toString("hex");
    const signed = `${got!.headers["webhook-id"]}.${got!.headers["webhook-timestamp"]}.${got!.raw}`;
    expect(got!.headers["webhook-signature"]).toBe(`v1,${opensslHmacBase64(keyHex, signed)}`);
    expect(await undocumented(got!)).toEqual([]);
  });

  it("deliver only the subscribed events, each to its subscribers", async () => {
    const { key } = await fundedAccount(gw.url, 25, "pro"); // the sign-up grant: credits.low below 5
    const lowPath = uniquePath("low");
    const errPath = uniquePath("err");
    await register(key, { url: rx.url(lowPath), events: ["credits.low", "credits.depleted"] });
    await register(key, { url: rx.url(errPath), events: ["tool.error"] });
    for (let i = 0; i < 25; i++)
      expect((await callTool(gw.url, key, "hash", { text: `${i}` })).status).toBe(200);
    const low = await rx.waitFor(lowPath, 2);
    expect(low.map((r) => JSON.parse(r.raw).event).sort()).toEqual([
      "credits.depleted",
      "credits.low",
    ]);
    expect(
      JSON.parse(low.find((r) => r.headers["x-webhook-event"] === "credits.low")!.raw).data,
    ).toEqual({ credits_remaining: 4, tool_name: "hash", threshold: 5 });
    expect(
      JSON.parse(low.find((r) => r.headers["x-webhook-event"] === "credits.depleted")!.raw).data,
    ).toMatchObject({ credits_remaining: 0, tool_name: "hash" });
    for (const delivery of low) expect(await undocumented(delivery)).toEqual([]);
    await new Promise((r) => setTimeout(r, 500));
    expect(rx.at(errPath)).toEqual([]);
  });

  it("send the test event to the named webhook, or to all of them whatever they subscribed to", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const [p1, p2] = [uniquePath("t1"), uniquePath("t2")];
    const h1 = (await register(key, { url: rx.url(p1), events: ["tool.error"] })).body;
    await register(key, { url: rx.url(p2), events: ["credits.low"] });
    await sendTest(key, h1.id);
    await rx.waitFor(p1, 1);
    await new Promise((r) => setTimeout(r, 300));
    expect([rx.at(p1).length, rx.at(p2).length]).toEqual([1, 0]);
    expect((await sendTest(key)).body.sent).toHaveLength(2);
    await rx.waitFor(p2, 1);
    expect([rx.at(p1).length, rx.at(p2).length]).toEqual([2, 1]);
    // An empty id (a client's unset variable) names no webhook: refused, not sent to every one.
    const empty = await call(`${gw.url}/api/v1/webhooks/test`, { key, body: { webhook_id: "" } });
    expect([empty.status, empty.body.error.param]).toEqual([422, "webhook_id"]);
    await new Promise((r) => setTimeout(r, 300));
    expect([rx.at(p1).length, rx.at(p2).length]).toEqual([2, 1]);
  });

  it("sign with both secrets while a rotation overlaps; X-Webhook-Signature uses the new one", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const path = uniquePath("rotate");
    const hook = (await register(key, { url: rx.url(path), events: ["tool.error"] })).body;
    const rotated = await call(`${gw.url}/api/v1/webhooks/${hook.id}/rotate-secret`, {
      key,
      body: { overlap_seconds: 3600 },
    });
    expect(rotated.body.secret).not.toBe(hook.secret);
    expect(rotated.body.previous_secret_expires_at).not.toBeNull();
    await sendTest(key, hook.id);
    const [got] = await rx.waitFor(path, 1);
    expect(got!.headers["x-webhook-signature"]).toBe(
      `sha256=${opensslHmacHex(rotated.body.secret, got!.raw)}`,
    );
    const signed = `${got!.headers["webhook-id"]}.${got!.headers["webhook-timestamp"]}.${got!.raw}`;
    const sig = (secret: string) =>
      `v1,${opensslHmacBase64(Buffer.from(secret.slice(6), "base64").toString("hex"), signed)}`;
    expect(String(got!.headers["webhook-signature"]).split(" ")).toEqual([
      sig(rotated.body.secret),
      sig(hook.secret),
    ]);
  });

  it("keep the promised overlap: a second rotation while the old secret still signs is 409, unless it asks for no overlap", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const path = uniquePath("rotate-twice");
    const hook = (await register(key, { url: rx.url(path), events: ["tool.error"] })).body;
    const rotate = (overlap: number) =>
      call(`${gw.url}/api/v1/webhooks/${hook.id}/rotate-secret`, {
        key,
        body: { overlap_seconds: overlap },
      });
    const first = await rotate(3600);
    const second = await rotate(3600);
    expect([second.status, second.body.error?.code]).toEqual([409, "secret_rotation_in_progress"]);
    expect(second.body.error.message).toContain(first.body.previous_secret_expires_at);
    // Nothing changed: both secrets the first rotation promised still sign.
    const listed = (await call(`${gw.url}/api/v1/webhooks`, { key })).body.data[0];
    expect(listed.previous_secret_expires_at).toBe(first.body.previous_secret_expires_at);
    await sendTest(key, hook.id);
    const [got] = await rx.waitFor(path, 1);
    expect(got!.headers["x-webhook-signature"]).toBe(
      `sha256=${opensslHmacHex(first.body.secret, got!.raw)}`,
    );
    expect(String(got!.headers["webhook-signature"]).split(" ")).toHaveLength(2);

    // An explicit cut (a leaked secret): no overlap, only the new secret signs from now on.
    const cut = await rotate(0);
    expect([cut.status, cut.body.previous_secret_expires_at]).toEqual([200, null]);
    await sendTest(key, hook.id);
    const [, after] = await rx.waitFor(path, 2);
    expect(after!.headers["x-webhook-signature"]).toBe(
      `sha256=${opensslHmacHex(cut.body.secret, after!.raw)}`,
    );
    expect(String(after!.headers["webhook-signature"]).split(" ")).toHaveLength(1);
    // With no old secret left signing, a rotation with an overlap is allowed again.
    expect((await rotate(60)).status).toBe(200);
  });

  it("are logged per webhook and can be sent again with the same event id", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const path = uniquePath("log");
    const hook = (await register(key, { url: rx.url(path), events: ["tool.error"] })).body;
    const eventId = (await sendTest(key, hook.id)).body.sent[0].event_id;
    await rx.waitFor(path, 1);
    expect(await deliveryLog(key, hook.id, 1)).toEqual([
      {
        event_id: eventId,
        event: "webhook.test",
        attempt: 1,
        at: expect.any(String),
        status: 200,
        duration_ms: expect.any(Number),
        outcome: "delivered",
        error: null,
        next_attempt_at: null,
      },
    ]);
    expect(
      (
        await call(`${gw.url}/api/v1/webhooks/${hook.id}/deliveries/${eventId}/resend`, {
          key,
          method: "POST",
        })
      ).status,
    ).toBe(202);
    const both = await rx.waitFor(path, 2);
    expect(both.map((r) => r.headers["x-webhook-id"])).toEqual([eventId, eventId]);
    expect(both[1]!.raw).toBe(both[0]!.raw);
    expect(
      (
        await call(`${gw.url}/api/v1/webhooks/${hook.id}/deliveries/evt_unknown/resend`, {
          key,
          method: "POST",
        })
      ).status,
    ).toBe(404);
  });

  it("reach platform webhooks: agent.registered for every new account", async () => {
    const path = uniquePath("platform");
    const hook = await admin(gw.url, "/webhooks/register", {
      body: { url: rx.url(path), events: ["agent.registered"] },
    });
    expect(hook.status).toBe(201);
    const { accountId } = await signUp(gw.url);
    // Accounts made by earlier tests may still be on their way to this platform webhook: find ours.
    const mine = await rx.waitForBody(path, (body) => body.data?.agent_id === accountId);
    expect(JSON.parse(mine!.raw)).toMatchObject({
      event: "agent.registered",
      data: { agent_id: accountId, tier: "free", email: expect.stringContaining("@example.com") },
    });
    expect(mine!.headers["x-webhook-signature"]).toBe(
      `sha256=${opensslHmacHex(hook.body.secret, mine!.raw)}`,
    );
    expect(
      (await call(`${gw.url}/api/v1/admin/webhooks`, { key: ADMIN_KEY })).body.data.map(
        (w: { id: string }) => w.id,
      ),
    ).toContain(hook.body.id);
    expect((await admin(gw.url, `/webhooks/${hook.body.id}`, { method: "DELETE" })).status).toBe(
      200,
    );
    expect((await admin(gw.url, `/webhooks/${hook.body.id}`, { method: "DELETE" })).status).toBe(
      404,
    );
  });
});

describe.concurrent("retries", () => {
  // 400 ms of slack at the 1 s step: a loaded two-core CI machine delays timers that much; 1 s, 5 s and 14 s stay distinct.
  const within = (actual: number, expected: number) =>
    expect(Math.abs(actual - expected)).toBeLessThanOrEqual(Math.max(expected * 0.15, 400));

  it("500, 500, 500, 200: four attempts about 0 s, 1 s, 5 s and 14 s after the first", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const path = uniquePath("retry");
    rx.script(path, [500, 500, 500, 200]);
    const hook = (await register(key, { url: rx.url(path), events: ["tool.error"] })).body;
    await sendTest(key, hook.id);
    const attempts = await rx.waitFor(path, 4, 25_000);
    expect(attempts).toHaveLength(4);
    const t0 = attempts[0]!.at;
    for (const [i, expected] of [1000, 5000, 14_000].entries())
      within(attempts[i + 1]!.at - t0, expected);
    expect(new Set(attempts.map((a) => a.headers["x-webhook-id"])).size).toBe(1);
    const log = await deliveryLog(key, hook.id, 4);
    expect(
      log.map((d: { attempt: number; status: number; outcome: string }) => [
        d.attempt,
        d.status,
        d.outcome,
      ]),
    ).toEqual([
      [4, 200, "delivered"],
      [3, 500, "retrying"],
      [2, 500, "retrying"],
      [1, 500, "retrying"],
    ]);
    expect(log[1].next_attempt_at).not.toBeNull();
  }, 30_000);

  it("a retry due after its webhook was deleted is not sent, and is counted as dropped", async () => {
    const dropped = async () =>
      (await gw.services.metrics.webhookDeliveries.get()).values.find(
        (v) => v.labels.outcome === "dropped",
      )?.value ?? 0;
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const path = uniquePath("deleted-before-retry");
    rx.script(path, [500, 200]);
    const hook = (await register(key, { url: rx.url(path), events: ["tool.error"] })).body;
    await sendTest(key, hook.id);
    await rx.waitFor(path, 1);
    const before = await dropped();
    await call(`${gw.url}/api/v1/webhooks/${hook.id}`, { key, method: "DELETE" });
    const deadline = Date.now() + 5000;
    while ((await dropped()) === before && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    expect((await dropped()) - before).toBe(1);
    expect(rx.at(path)).toHaveLength(1);
  }, 10_000);

  it("a 400 is not retried", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const path = uniquePath("bad-request");
    rx.script(path, [400]);
    const hook = (await register(key, { url: rx.url(path), events: ["tool.error"] })).body;
    await sendTest(key, hook.id);
    await rx.waitFor(path, 1);
    await new Promise((r) => setTimeout(r, 2500));
    expect(rx.at(path)).toHaveLength(1);
    const log = (await call(`${gw.url}/api/v1/webhooks/${hook.id}/deliveries`, { key })).body.data;
    expect(log.map((d: { status: number; outcome: string }) => [d.status, d.outcome])).toEqual([
      [400, "failed"],
    ]);
  }, 10_000);

  it("a 429 is retried", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const path = uniquePath("busy");
    rx.script(path, [429, 200]);
    const hook = (await register(key, { url: rx.url(path), events: ["tool.error"] })).body;
    await sendTest(key, hook.id);
    const attempts = await rx.waitFor(path, 2, 5000);
    expect(attempts).toHaveLength(2);
    within(attempts[1]!.at - attempts[0]!.at, 1000);
  }, 10_000);

  it("no answer within 10 s is retried 1 s later", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const path = uniquePath("silent");
    rx.script(path, ["hang", 200]);
    const hook = (await register(key, { url: rx.url(path), events: ["tool.error"] })).body;
    await sendTest(key, hook.id);
    const attempts = await rx.waitFor(path, 2, 20_000);
    expect(attempts).toHaveLength(2);
    within(attempts[1]!.at - attempts[0]!.at, 11_000);
    const log = await deliveryLog(key, hook.id, 2);
    expect(log.at(-1)).toMatchObject({
      attempt: 1,
      status: null,
      outcome: "retrying",
      error: expect.stringContaining("no answer within 10 s"),
    });
  }, 25_000);

  it("a 200 followed by an endless body is delivered once, and the connection is dropped after a small part of it", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const path = uniquePath("endless");
    rx.script(path, ["endless"]);
    const hook = (await register(key, { url: rx.url(path), events: ["tool.error"] })).body;
    const started = Date.now();
    await sendTest(key, hook.id);
    const stream = await rx.streamClosed(path, 5000);
    expect(stream?.closedAt).not.toBeNull();
    expect(stream!.closedAt! - started).toBeLessThan(5000);
    // What was read, plus what the sockets' buffers held when the gateway hung up: bounded.
    expect(stream!.sent).toBeLessThan(8 * 1024 * 1024);
    const log = await deliveryLog(key, hook.id, 1);
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ attempt: 1, status: 200, outcome: "delivered", error: null });
  }, 10_000);

  it("a 200 followed by a body trickled a byte a second is dropped at the 10 s deadline", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const path = uniquePath("trickle");
    rx.script(path, ["trickle"]);
    const hook = (await register(key, { url: rx.url(path), events: ["tool.error"] })).body;
    await sendTest(key, hook.id);
    const [request] = await rx.waitFor(path, 1, 5000);
    const stream = await rx.streamClosed(path, 15_000);
    expect(stream?.closedAt).not.toBeNull();
    within(stream!.closedAt! - request!.at, 10_000);
    const log = await deliveryLog(key, hook.id, 1);
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ attempt: 1, status: 200, outcome: "delivered" });
  }, 20_000);

  it("a redirect is a failure and is not followed", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const path = uniquePath("moved");
    rx.script(path, ["redirect"]);
    const hook = (await register(key, { url: rx.url(path), events: ["tool.error"] })).body;
    await sendTest(key, hook.id);
    await rx.waitFor(path, 2, 5000);
    expect(rx.at(`${path}-moved`)).toEqual([]);
    const log = (await call(`${gw.url}/api/v1/webhooks/${hook.id}/deliveries`, { key })).body.data;
    expect(log.at(-1)).toMatchObject({
      attempt: 1,
      status: 302,
      outcome: "retrying",
      error: expect.stringContaining("not followed"),
    });
  }, 10_000);
});
