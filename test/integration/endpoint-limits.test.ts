import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, fundedAccount, signUp, startGateway, type TestGateway } from "../helpers/gateway.js";
import { startReceiver } from "../helpers/receiver.js";

/**
 * Endpoints that cost us something per call (Redis keys, e-mail, outbound requests) and are
 * not counted by a tier's limit are limited per client address and per account: 429
 * `rate_limited` with Retry-After, in the one error shape.
 */
let gw: TestGateway;
let rx: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  rx = await startReceiver();
  gw = await startGateway({
    env: {
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "1",
      ENDPOINT_LIMITS:
        "wallet-challenge=3/60,verification-email=2/3600,verify-email=3/60,webhook-test=2/60,webhook-resend=1/60,custom-tool-register=2/60",
    },
  });
});
afterAll(async () => {
  await gw?.stop();
  await rx?.stop();
});

const from = (address: string) => ({ "x-forwarded-for": address });

function expectRateLimited(res: { status: number; headers: Headers; body: any }, message: RegExp) {
  expect(res.status).toBe(429);
  expect(res.body).toEqual({
    error: {
      type: "rate_limit_error",
      code: "rate_limited",
      message: expect.stringMatching(message),
      request_id: res.headers.get("x-request-id"),
    },
  });
  expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
}

describe("endpoint limits", () => {
  it("limit wallet sign-in challenges per client address", async () => {
    const challenge = (address: string) =>
      call(`${gw.url}/api/v1/wallet/challenge`, {
        body: { address: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" },
        headers: from(address),
      });
    for (let i = 0; i < 3; i++) expect((await challenge("198.51.100.30")).status).toBe(200);
    expectRateLimited(
      await challenge("198.51.100.30"),
      /^At most 3 wallet sign-in challenges per minute per client address/,
    );
    expect((await challenge("198.51.100.31")).status).toBe(200);
  });

  it("count an IPv6 client by its /64: its addresses share one limit, another /64 has its own", async () => {
    const challenge = (address: string) =>
      call(`${gw.url}/api/v1/wallet/challenge`, {
        body: { address: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" },
        headers: from(address),
      });
    for (let i = 1; i <= 3; i++) expect((await challenge(`2001:db8:30:1::${i}`)).status).toBe(200);
    expectRateLimited(
      await challenge("2001:db8:30:1:ffff::4"),
      /^At most 3 wallet sign-in challenges per minute per client address/,
    );
    expect((await challenge("2001:db8:30:2::1")).status).toBe(200);
  });

  it("limit e-mail verification links opened per client address, valid or not", async () => {
    const open = (address: string) =>
      call(`${gw.url}/api/v1/verify-email?token=acct_x.1.guess`, { headers: from(address) });
    for (let i = 0; i < 3; i++) expect((await open("198.51.100.35")).status).toBe(400);
    expectRateLimited(
      await open("198.51.100.35"),
      /^At most 3 e-mail verifications per minute per client address/,
    );
    expect((await open("198.51.100.36")).status).toBe(400);
  });

  it("limit verification e-mails per account and per client address", async () => {
    const resend = (key: string, address: string) =>
      call(`${gw.url}/api/v1/account/verification-email`, {
        method: "POST",
        key,
        headers: from(address),
      });
    const first = await signUp(gw.url);
    expect((await resend(first.key, "198.51.100.40")).status).toBe(202);
    expect((await resend(first.key, "198.51.100.41")).status).toBe(202);
    // A third e-mail to the same inbox, from yet another address: the account's limit holds.
    expectRateLimited(
      await resend(first.key, "198.51.100.42"),
      /^At most 2 verification e-mails per hour per account/,
    );
    // Another account from an address that has used its share: the address's limit holds.
    const second = await signUp(gw.url);
    expect((await resend(second.key, "198.51.100.42")).status).toBe(202);
    expect((await resend(second.key, "198.51.100.42")).status).toBe(202);
    expectRateLimited(
      await resend(second.key, "198.51.100.42"),
      /^At most 2 verification e-mails per hour per (account|client address)/,
    );
  });

  it("limit webhook test events and resends per account", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const hook = (
      await call(`${gw.url}/api/v1/webhooks/register`, {
        key,
        body: { url: rx.url("/limits"), events: ["tool.error"] },
      })
    ).body;
    const test = () =>
      call(`${gw.url}/api/v1/webhooks/test`, { key, body: { webhook_id: hook.id } });
    const sent = await test();
    expect(sent.status).toBe(202);
    expect((await test()).status).toBe(202);
    expectRateLimited(await test(), /^At most 2 webhook test events per minute per account/);

    const eventId = sent.body.sent[0].event_id;
    await rx.waitForBody("/limits", (body) => body.id === eventId);
    let logged = false;
    for (let i = 0; i < 50 && !logged; i++) {
      logged = (
        await call(`${gw.url}/api/v1/webhooks/${hook.id}/deliveries`, { key })
      ).body.data.some((d: { event_id: string }) => d.event_id === eventId);
      if (!logged) await new Promise((r) => setTimeout(r, 50));
    }
    const resend = () =>
      call(`${gw.url}/api/v1/webhooks/${hook.id}/deliveries/${eventId}/resend`, {
        key,
        method: "POST",
      });
    expect((await resend()).status).toBe(202);
    expectRateLimited(await resend(), /^At most 1 webhook resends per minute per account/);
  });

  it("limit custom tool registrations per account, refused ones too (each compiles two schemas)", async () => {
    const { key } = await fundedAccount(gw.url, 100, "business");
    const register = (address: string) =>
      call(`${gw.url}/api/v1/custom-tools`, { key, body: {}, headers: from(address) });
    for (const address of ["198.51.100.60", "198.51.100.61"])
      expect((await register(address)).status).toBe(422);
    expectRateLimited(
      await register("198.51.100.62"),
      /^At most 2 custom tool registrations per minute per account/,
    );
  });
});
