import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  balanceOf,
  call,
  callTool,
  eventsOf,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";
import { startReceiver } from "../helpers/receiver.js";

/**
 * Account controls through the API, on a real gateway with Redis and in the embedded mode (the
 * memory store): keys with an expiry, keys limited to named tools, keys with their own budget,
 * the account's spend alert — each refused call answered in the one error shape and charged
 * nothing, and one account never touching another's keys.
 */
describe.each(["redis", "memory"] as const)("account controls (%s store)", (store) => {
  let gw: TestGateway;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    rx = await startReceiver();
    gw = await startGateway({ store, env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "1" } });
  });
  afterAll(async () => {
    await gw.stop();
    await rx.stop();
  });

  const createKey = (key: string, body: Record<string, unknown>) =>
    call(`${gw.url}/api/v1/keys`, { key, body });
  const updateKey = (key: string, id: string, body: Record<string, unknown>) =>
    call(`${gw.url}/api/v1/keys/${id}`, { key, method: "PATCH", body });
  const listed = async (key: string, id: string) =>
    (await call(`${gw.url}/api/v1/keys`, { key })).body.data.find(
      (k: { id: string }) => k.id === id,
    );
  const hash = (key: string, text = "hello") => callTool(gw.url, key, "hash", { text });

  it("refuses a key after its expiry time with 401 api_key_expired; a past expiry is refused at creation", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    const expiresAt = new Date(Date.now() + 1500).toISOString();
    const created = await createKey(key, { name: "short-lived", expires_at: expiresAt });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ status: "active", expires_at: expiresAt });
    expect((await hash(created.body.key)).status).toBe(200);
    await new Promise((r) => setTimeout(r, Date.parse(expiresAt) - Date.now() + 50));
    const before = await balanceOf(gw.url, key);
    const refused = await hash(created.body.key);
    expect(refused.status).toBe(401);
    expect(refused.body.error).toMatchObject({
      type: "authentication_error",
      code: "api_key_expired",
      message: `The API key expired at ${expiresAt}.`,
      expired_at: expiresAt,
    });
    expect(await balanceOf(gw.url, key)).toBe(before);
    expect(await listed(key, created.body.id)).toMatchObject({ status: "expired" });

    const past = await createKey(key, { expires_at: new Date(Date.now() - 1000).toISOString() });
    expect([past.status, past.body.error.code, past.body.error.param]).toEqual([
      422,
      "validation_failed",
      "expires_at",
    ]);
    // An offset carrying the instant past the year 9999 (answered as `+010000-…Z`) is refused,
    // on creation and on update; the last instant of 9999 is still taken.
    const far = await createKey(key, { name: "far", expires_at: "9999-12-31T23:59:59-23:59" });
    expect([
      far.status,
      far.body.error?.code,
      far.body.error?.param,
      far.body.error?.message,
    ]).toEqual([
      422,
      "validation_failed",
      "expires_at",
      "expires_at must be no later than 9999-12-31T23:59:59.999Z.",
    ]);
    const latest = await createKey(key, { name: "latest", expires_at: "9999-12-31T23:59:59.999Z" });
    expect([latest.status, latest.body.expires_at]).toEqual([201, "9999-12-31T23:59:59.999Z"]);
    const farUpdate = await updateKey(key, latest.body.id, {
      expires_at: "9999-12-31T23:59:59-00:01",
    });
    expect([farUpdate.status, farUpdate.body.error?.param]).toEqual([422, "expires_at"]);
  });

  it("lets a key call only its allowed tools (aliases resolved): another tool is 403 tool_not_allowed, uncharged; an unknown name is 400 at creation", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    const created = await createKey(key, { allowed_tools: ["hash", "uuid"] });
    expect(created.status).toBe(201);
    expect(created.body.allowed_tools).toEqual(["hash", "id-generate"]);
    const limited = created.body.key;
    expect((await hash(limited)).status).toBe(200);
    expect((await callTool(gw.url, limited, "uuid", { kind: "uuid-v4" })).status).toBe(200);
    const before = await balanceOf(gw.url, key);
    const refused = await callTool(gw.url, limited, "markdown-to-html", { markdown: "# hi" });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({
      type: "permission_error",
      code: "tool_not_allowed",
      allowed_tools: ["hash", "id-generate"],
    });
    // Refused for the tool before its input is judged: no hint about other tools' inputs.
    const badInput = await callTool(gw.url, limited, "markdown-to-html", { nonsense: 1 });
    expect([badInput.status, badInput.body.error.code]).toEqual([403, "tool_not_allowed"]);
    expect(await balanceOf(gw.url, key)).toBe(before);

    const unknown = await createKey(key, { allowed_tools: ["hash", "no-such-tool"] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatchObject({
      code: "unknown_tool_name",
      param: "allowed_tools.1",
    });
  });

  it("serves exactly a key's budget out of 20 concurrent calls, refusing the rest with 402 key_budget_exceeded and charging nothing for them", async () => {
    const { key } = await fundedAccount(gw.url, 1000);
    const created = await createKey(key, { budget: { credits: 5, period: "day" } });
    expect(created.body.budget).toMatchObject({ credits: 5, period: "day", spent: 0 });
    const before = await balanceOf(gw.url, key);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => hash(created.body.key, `call ${i}`)),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(5);
    const refused = results.filter((r) => r.status === 402);
    expect(refused).toHaveLength(15);
    const today = new Date();
    const nextDay = new Date(
      Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate() + 1),
    ).toISOString();
    expect(refused[0]!.body.error).toMatchObject({
      type: "payment_error",
      code: "key_budget_exceeded",
      budget: { credits: 5, period: "day", spent: 5, resets_at: nextDay },
    });
    expect(refused[0]!.body.error.message).toContain("nothing was charged");
    expect(await balanceOf(gw.url, key)).toBe(before - 5);
    expect(await listed(key, created.body.id)).toMatchObject({
      budget: { credits: 5, period: "day", spent: 5, resets_at: nextDay },
    });
    // The account's own unbudgeted key goes on.
    expect((await hash(key)).status).toBe(200);
  });

  it("keeps what a key spent when its budget's period changes: 3 spent under 3 a day leave nothing under 3 a month", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    const created = await createKey(key, { budget: { credits: 3, period: "day" } });
    for (let i = 0; i < 3; i++) expect((await hash(created.body.key)).status).toBe(200);
    const monthly = await updateKey(key, created.body.id, {
      budget: { credits: 3, period: "month" },
    });
    expect(monthly.body.budget).toMatchObject({ credits: 3, period: "month", spent: 3 });
    const refused = await hash(created.body.key);
    expect([refused.status, refused.body.error.code]).toEqual([402, "key_budget_exceeded"]);
    const daily = await updateKey(key, created.body.id, { budget: { credits: 4, period: "day" } });
    expect(daily.body.budget).toMatchObject({ credits: 4, period: "day", spent: 3 });
    expect((await hash(created.body.key)).status).toBe(200);
    expect((await hash(created.body.key)).status).toBe(402);
  });

  it("refuses a budget that is not a whole number of credits from 1 to 1,000,000,000 with a sentence that says so, naming the field", async () => {
    const { key } = await fundedAccount(gw.url, 10);
    for (const credits of [1e12, 0, 2.5]) {
      const refused = await createKey(key, { budget: { credits, period: "day" } });
      expect([refused.status, refused.body.error.code, refused.body.error.param]).toEqual([
        422,
        "validation_failed",
        "budget.credits",
      ]);
      expect(refused.body.error.message).toBe(
        `Invalid body field "budget.credits": a key's budget is a whole number of credits from 1 to 1,000,000,000.`,
      );
    }
  });

  it("fires spend.threshold_reached once when the month's spend reaches the alert, not once per call, and delivers it to the webhooks subscribed", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 1000);
    const path = `/spend-${store}-${Date.now()}`;
    const hook = await call(`${gw.url}/api/v1/webhooks/register`, {
      key,
      body: { url: rx.url(path), events: ["spend.threshold_reached"] },
    });
    expect(hook.status).toBe(201);
    const set = await call(`${gw.url}/api/v1/account/spend-alert`, {
      key,
      method: "PUT",
      body: { credits: 3 },
    });
    expect(set.status).toBe(200);
    expect(set.body.spend_alert).toEqual({ credits: 3 });
    for (let i = 0; i < 6; i++) expect((await hash(key, `spend ${i}`)).status).toBe(200);
    const events = await eventsOf(gw.services.store, accountId, 100, 1500);
    const alerts = events.filter((e) => e.event === "spend.threshold_reached");
    expect(alerts).toHaveLength(1);
    const now = new Date();
    expect(alerts[0]!.data).toEqual({
      threshold: 3,
      spent: 3,
      period: "month",
      period_start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
      tool_name: "hash",
    });
    const [delivered] = await rx.waitFor(path, 1);
    expect(JSON.parse(delivered!.raw)).toMatchObject({
      id: alerts[0]!.id,
      event: "spend.threshold_reached",
      data: alerts[0]!.data,
    });
    await new Promise((r) => setTimeout(r, 500));
    expect(rx.at(path)).toHaveLength(1);
    const account = await call(`${gw.url}/api/v1/account`, { key });
    expect(account.body.spend).toMatchObject({ period: "month", credits: 6 });
    const removed = await call(`${gw.url}/api/v1/account/spend-alert`, { key, method: "DELETE" });
    expect([removed.status, removed.body.spend_alert]).toEqual([200, null]);
    const again = await call(`${gw.url}/api/v1/account/spend-alert`, { key, method: "DELETE" });
    expect([again.status, again.body.error.code]).toEqual([404, "not_found"]);
    // Two DELETEs at once: one removes the alert, the other finds none, as in turn.
    for (let round = 0; round < 3; round++) {
      await call(`${gw.url}/api/v1/account/spend-alert`, {
        key,
        method: "PUT",
        body: { credits: 3 },
      });
      const both = await Promise.all(
        [1, 2].map(() => call(`${gw.url}/api/v1/account/spend-alert`, { key, method: "DELETE" })),
      );
      expect(both.map((r) => r.status).sort()).toEqual([200, 404]);
    }
    const bad = await call(`${gw.url}/api/v1/account/spend-alert`, {
      key,
      method: "PUT",
      body: { credits: 0 },
    });
    expect([bad.status, bad.body.error.param]).toEqual([422, "credits"]);
  });

  it("changes a key's controls for its very next call, clears them with null, and keeps them on rotation", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    const created = await createKey(key, { name: "worker" });
    const id = created.body.id;
    const limited = await updateKey(key, id, {
      allowed_tools: ["uuid"],
      budget: { credits: 9, period: "month" },
    });
    expect(limited.status).toBe(200);
    expect(limited.body).toMatchObject({
      name: "worker",
      allowed_tools: ["id-generate"],
      budget: { credits: 9 },
    });
    expect((await hash(created.body.key)).status).toBe(403);
    const rotated = await call(`${gw.url}/api/v1/keys/${id}/rotate`, { key, body: {} });
    expect(rotated.status).toBe(201);
    expect(rotated.body).toMatchObject({ allowed_tools: ["id-generate"], budget: { credits: 9 } });
    expect((await hash(rotated.body.key)).status).toBe(403);
    const cleared = await updateKey(key, rotated.body.id, { allowed_tools: null, budget: null });
    expect(cleared.body).toMatchObject({ allowed_tools: null, budget: null });
    expect((await hash(rotated.body.key)).status).toBe(200);
    // A revoked key's controls are not found, like the key.
    const gone = await updateKey(key, id, { budget: null });
    expect([gone.status, gone.body.error.code]).toEqual([404, "not_found"]);
  });

  it("never lets one account set controls on another's key: 404, and the key is unchanged", async () => {
    const a = await fundedAccount(gw.url, 100);
    const b = await fundedAccount(gw.url, 100);
    const attempt = await updateKey(b.key, a.keyId, { allowed_tools: ["uuid"] });
    expect([attempt.status, attempt.body.error.code]).toEqual([404, "not_found"]);
    expect(await listed(a.key, a.keyId)).toMatchObject({ allowed_tools: null, budget: null });
    expect((await hash(a.key)).status).toBe(200);
  });

  it("lets a key with controls call tools but manage no keys, controls, single sign-on or webhooks (403 unrestricted_key_required)", async () => {
    const { key, keyId } = await fundedAccount(gw.url, 100, "business");
    const limited = (await createKey(key, { budget: { credits: 50, period: "month" } })).body;
    const hook = (
      await call(`${gw.url}/api/v1/webhooks/register`, {
        key,
        body: { url: rx.url("/limited"), events: ["tool.error"] },
      })
    ).body;
    const attempts = [
      await createKey(limited.key, {}),
      await updateKey(limited.key, limited.id, { budget: null }),
      await call(`${gw.url}/api/v1/keys/${keyId}`, { key: limited.key, method: "DELETE" }),
      await call(`${gw.url}/api/v1/keys/${limited.id}/rotate`, { key: limited.key, body: {} }),
      await call(`${gw.url}/api/v1/account/spend-alert`, {
        key: limited.key,
        method: "PUT",
        body: { credits: 1 },
      }),
      // Single sign-on opens dashboard sessions, which could lift the key's limits.
      await call(`${gw.url}/api/v1/account/sso`, {
        key: limited.key,
        method: "PUT",
        body: {
          issuer: "https://idp.example",
          client_id: "c",
          client_secret: "s",
          email_domains: ["example.com"],
        },
      }),
      await call(`${gw.url}/api/v1/account/sso`, { key: limited.key, method: "DELETE" }),
      await call(`${gw.url}/api/v1/webhooks/register`, {
        key: limited.key,
        body: { url: rx.url("/limited"), events: ["tool.error"] },
      }),
      await call(`${gw.url}/api/v1/webhooks/${hook.id}/rotate-secret`, {
        key: limited.key,
        body: {},
      }),
      await call(`${gw.url}/api/v1/webhooks/${hook.id}`, { key: limited.key, method: "DELETE" }),
    ];
    expect(attempts.map((r) => [r.status, r.body.error?.code])).toEqual(
      Array(10).fill([403, "unrestricted_key_required"]),
    );
    // Told what it may not do before what is wrong with what it sent: the same with bodies refused.
    const malformed = await Promise.all(
      [
        "/keys",
        "/account/sso",
        "/account/spend-alert",
        "/custom-tools",
        "/webhooks/register",
        `/keys/${limited.id}/rotate`,
      ].map((path) =>
        call(`${gw.url}/api/v1${path}`, {
          key: limited.key,
          method: path.startsWith("/account") ? "PUT" : "POST",
          body: { nonsense: true },
        }),
      ),
    );
    expect(malformed.map((r) => [r.status, r.body.error?.code])).toEqual(
      Array(6).fill([403, "unrestricted_key_required"]),
    );
    expect((await call(`${gw.url}/api/v1/keys`, { key: limited.key })).status).toBe(200);
    expect((await call(`${gw.url}/api/v1/webhooks`, { key: limited.key })).body.data).toHaveLength(
      1,
    );
    expect(await listed(key, limited.id)).toMatchObject({ budget: { credits: 50 } });
  });
});
