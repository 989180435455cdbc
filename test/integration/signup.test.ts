import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, eventsOf, startGateway, type TestGateway } from "../helpers/gateway.js";
import { startSmtpServer, verificationLink } from "../helpers/smtp.js";

let gw: TestGateway;
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
beforeAll(async () => {
  smtp = await startSmtpServer();
  gw = await startGateway({
    env: {
      SMTP_URL: smtp.url,
      SIGNUPS_PER_HOUR_PER_IP: "3",
      PUBLIC_BASE_URL: "http://127.0.0.1:1",
    },
  });
});
afterAll(async () => {
  await gw.stop();
  await smtp.stop();
});

let ip = 0;
const signup = (body: unknown, init: { rawBody?: string; headers?: Record<string, string> } = {}) =>
  call(`${gw.url}/api/v1/signup`, {
    method: "POST",
    body,
    ...init,
    headers: { "x-forwarded-for": `192.0.2.${++ip}`, ...init.headers },
  });

describe("POST /api/v1/signup", () => {
  it("returns a working key at once with 25 credits, e-mails a link that adds 75 credits once", async () => {
    const email = `new-${Date.now()}@Example.com`;
    const res = await signup({ email });
    expect(res.status).toBe(201);
    expect(res.body.api_key).toMatch(/^tg_live_[0-9a-z]{16}_[0-9A-Za-z]{32}$/);
    expect(res.body.account).toMatchObject({
      email: email.toLowerCase(),
      tier: "free",
      credits: 25,
      email_verified: false,
    });

    const me = await call(`${gw.url}/api/v1/account`, { key: res.body.api_key });
    expect(me.body).toMatchObject({ id: res.body.account.id, credits: 25 });

    const mail = await smtp.next();
    expect(mail.to).toEqual([email.toLowerCase()]);
    const link = new URL(verificationLink(mail.raw));
    const verified = await call(`${gw.url}${link.pathname}${link.search}`);
    expect(verified.body).toMatchObject({ email_verified: true, credits_added: 75, credits: 100 });
    const again = await call(`${gw.url}${link.pathname}${link.search}`);
    expect(again.body).toMatchObject({ credits_added: 0, credits: 100 });

    const usage = await call(`${gw.url}/api/v1/usage`, { key: res.body.api_key });
    expect(
      usage.body.data.map((e: { kind: string; amount: number }) => [e.kind, e.amount]),
    ).toEqual([
      ["grant", 75],
      ["grant", 25],
    ]);
    const events = await eventsOf(gw.services.store, res.body.account.id, 1);
    expect(events).toMatchObject([
      {
        event: "agent.registered",
        data: { agent_id: res.body.account.id, email: email.toLowerCase(), tier: "free" },
      },
    ]);
  });

  it("refuses a second account for the same e-mail address", async () => {
    const email = `twice-${Date.now()}@example.com`;
    expect((await signup({ email })).status).toBe(201);
    const res = await signup({ email: email.toUpperCase() });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: "email_taken", param: "email" });
  });

  it("takes an address pasted with spaces or a line break around it as the address itself", async () => {
    const email = `pasted-${Date.now()}@example.com`;
    const res = await signup({
      email: `  Pasted-${email.slice(7).replace("example", "Example")}\n`,
    });
    expect(res.status).toBe(201);
    expect(res.body.account.email).toBe(email);
    const again = await signup({ email: ` ${email} ` });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: "email_taken", param: "email" });
  });

  it.each([
    ["a malformed address", { email: "not-an-address" }, 422, "validation_failed", "email"],
    ["a wrong type", { email: 42 }, 422, "validation_failed", "email"],
    [
      "an unknown field",
      { email: "ok@example.com", admin: true },
      422,
      "validation_failed",
      "admin",
    ],
    ["no body", undefined, 422, "validation_failed", "email"],
    // Longer than SMTP carries (RFC 5321: 64 before the @, 63 to a domain label): no mail arrives.
    [
      "a local part over 64 characters",
      { email: `${"a".repeat(65)}@example.com` },
      422,
      "validation_failed",
      "email",
    ],
    [
      "a domain label over 63 characters",
      { email: `a@${"b".repeat(64)}.example.com` },
      422,
      "validation_failed",
      "email",
    ],
  ])("answers %s with the one error shape", async (_name, body, status, code, param) => {
    const res = await signup(body);
    expect(res.status).toBe(status);
    expect(res.body).toEqual({
      error: {
        type: "invalid_request_error",
        code,
        message: expect.any(String),
        param,
        request_id: res.headers.get("x-request-id"),
      },
    });
  });

  it("answers malformed JSON 400, a non-JSON body 415 and an oversized body 413", async () => {
    expect((await signup(undefined, { rawBody: '{"email":' })).body.error.code).toBe(
      "invalid_json",
    );
    const text = await signup(undefined, {
      rawBody: "email=a@b.c",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect([text.status, text.body.error.code]).toEqual([415, "unsupported_media_type"]);
    const huge = await signup({ email: "big@example.com", padding: "x".repeat(1_100_000) });
    expect([huge.status, huge.body.error.code]).toEqual([413, "body_too_large"]);
  });

  it("limits sign-ups per client address", async () => {
    const headers = { "x-forwarded-for": "198.51.100.7" };
    const statuses = [];
    for (let i = 0; i < 4; i++)
      statuses.push(
        await call(`${gw.url}/api/v1/signup`, {
          body: { email: `flood-${i}-${Date.now()}@example.com` },
          headers,
        }),
      );
    expect(statuses.map((r) => r.status)).toEqual([201, 201, 201, 429]);
    expect(statuses[3]!.body.error.code).toBe("rate_limited");
    expect(Number(statuses[3]!.headers.get("retry-after"))).toBeGreaterThan(0);
  });
});

describe("GET /api/v1/verify-email", () => {
  it("refuses a forged, tampered or missing token and grants nothing", async () => {
    const res = await signup({ email: `forge-${Date.now()}@example.com` });
    const id = res.body.account.id;
    const link = new URL(verificationLink((await smtp.next()).raw));
    const token = link.searchParams.get("token")!;
    const [, expires, sig] = token.split(".");
    for (const bad of [
      `${id}.${expires}.${"A".repeat(sig!.length)}`,
      `${id}.${Number(expires) + 1}.${sig}`,
      "garbage",
    ]) {
      const r = await call(`${gw.url}/api/v1/verify-email?token=${encodeURIComponent(bad)}`);
      expect([r.status, r.body.error.code]).toEqual([400, "invalid_token"]);
    }
    expect((await call(`${gw.url}/api/v1/verify-email`)).body.error).toMatchObject({
      code: "validation_failed",
      param: "token",
    });
    expect((await gw.services.store.getAccount(id))?.balance).toBe(25);
  });
});
