import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomId } from "../../src/lib/ids.js";
import { admin, call, startGateway, type TestGateway } from "../helpers/gateway.js";
import { putSso, startOidcProvider, type TestOidcProvider } from "../helpers/oidc-provider.js";
import { freePort } from "../helpers/ports.js";
import { startReceiver } from "../helpers/receiver.js";
import { reclaimLink, startSmtpServer } from "../helpers/smtp.js";

/**
 * Someone signs up with another person's address: sign-up gives them a key before the address is
 * proven. The owner's verification e-mail carries a second link that takes the account back
 * (src/dashboard/reclaim.ts).
 */
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let idp: TestOidcProvider;
let gw: TestGateway;

beforeAll(async () => {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  [smtp, rx, idp] = await Promise.all([
    startSmtpServer(),
    startReceiver(),
    startOidcProvider({ redirectUri: `${base}/dashboard/sso/callback` }),
  ]);
  gw = await startGateway({
    env: {
      SMTP_URL: smtp.url,
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "1",
      SSO_ALLOW_PRIVATE_TARGETS: "1",
      PORT: String(port),
      PUBLIC_BASE_URL: base,
    },
  });
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  await Promise.all([rx?.stop(), smtp?.stop(), idp?.stop()]);
});

/** A squatter's account: signed up with `email`, moved to `tier`; its key and the owner's take-back token. */
async function squatted(email: string, tier: string) {
  const signup = await call(`${gw.url}/api/v1/signup`, {
    body: { email },
    headers: { "x-forwarded-for": client() },
  });
  expect(signup.status).toBe(201);
  const accountId: string = signup.body.account.id;
  await admin(gw.url, `/accounts/${accountId}/tier`, { method: "PUT", body: { tier } });
  const mail = await smtp.mailTo(email);
  const token = new URL(reclaimLink(mail.raw)).searchParams.get("token")!;
  return { accountId, key: signup.body.api_key as string, token };
}

const client = () => `10.9.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
const asBrowser = {
  "content-type": "application/x-www-form-urlencoded",
  "sec-fetch-site": "same-origin",
};

const pressButton = (token: string) =>
  fetch(`${gw.url}/dashboard/reclaim`, {
    method: "POST",
    redirect: "manual",
    headers: { ...asBrowser, "x-forwarded-for": client() },
    body: new URLSearchParams({ token }).toString(),
  });

const keyWorks = async (key: string) =>
  (await call(`${gw.url}/api/v1/account`, { key })).status === 200;

describe("taking back an account someone signed up with your address", () => {
  it("the verification e-mail's second link, used once, stops every key, session and webhook of the account and signs the owner in", async () => {
    const email = `owner-${randomId(8)}@example.com`;
    const signup = await call(`${gw.url}/api/v1/signup`, {
      body: { email },
      headers: { "x-forwarded-for": client() },
    });
    expect(signup.status).toBe(201);
    const accountId: string = signup.body.account.id;
    const squatterKey: string = signup.body.api_key;

    // The squatter settles in: Pro, a second key rotated with a grace period, a webhook, a session.
    await admin(gw.url, `/accounts/${accountId}/tier`, { method: "PUT", body: { tier: "pro" } });
    const second = await call(`${gw.url}/api/v1/keys`, { key: squatterKey, body: { name: "2" } });
    const rotated = await call(`${gw.url}/api/v1/keys/${second.body.id}/rotate`, {
      key: squatterKey,
      body: { grace_seconds: 3600 },
    });
    expect(rotated.status).toBe(201);
    const hook = await call(`${gw.url}/api/v1/webhooks/register`, {
      key: squatterKey,
      body: { url: rx.url("/squatter"), events: ["tool.error"] },
    });
    expect(hook.status).toBe(201);
    const signIn = await fetch(`${gw.url}/dashboard/sign-in`, {
      method: "POST",
      redirect: "manual",
      headers: { ...asBrowser, "x-forwarded-for": client() },
      body: new URLSearchParams({ api_key: squatterKey }).toString(),
    });
    const squatterCookie = (signIn.headers.get("set-cookie") ?? "").split(";")[0]!;
    expect(squatterCookie).toMatch(/^tg_session=/);
    const squatterKeys = [squatterKey, second.body.key, rotated.body.key];

    const mail = await smtp.mailTo(email);
    expect(mail.raw).toContain("Did not sign up?");
    const link = new URL(reclaimLink(mail.raw));

    // A mail scanner fetching the link changes nothing: the page only shows the button.
    const page = await fetch(`${gw.url}${link.pathname}${link.search}`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("Take back the account");
    for (const key of squatterKeys) expect(await keyWorks(key)).toBe(true);

    const taken = await pressButton(link.searchParams.get("token")!);
    expect(taken.status).toBe(303);
    expect(taken.headers.get("location")).toBe("/dashboard/keys");
    const ownerCookie = (taken.headers.get("set-cookie") ?? "").split(";")[0]!;
    expect(ownerCookie).toMatch(/^tg_session=/);

    for (const key of squatterKeys) expect(await keyWorks(key)).toBe(false);
    const squatterSession = await call(`${gw.url}/dashboard/api/v1/account`, {
      headers: { cookie: squatterCookie },
    });
    expect(squatterSession.status).toBe(401);

    const owner = (path: string) =>
      call(`${gw.url}/dashboard/api/v1${path}`, { headers: { cookie: ownerCookie } });
    expect((await owner("/account")).body).toMatchObject({
      id: accountId,
      email,
      email_verified: true,
      tier: "pro",
      credits: 100,
    });
    expect((await owner("/webhooks")).body.data).toEqual([]);
    const keys = (await owner("/keys")).body.data as { status: string }[];
    expect(keys.length).toBe(3);
    expect(keys.every((k) => k.status === "revoked")).toBe(true);

    // Once only: a second press (the owner's own later key must not be revoked by the old e-mail).
    const again = await pressButton(link.searchParams.get("token")!);
    expect(again.status).toBe(400);
    expect(await again.text()).toContain("This link does not work");
  });

  it("refuses a made-up token and one posted from another site, and revokes nothing", async () => {
    const email = `owner-${randomId(8)}@example.com`;
    const signup = await call(`${gw.url}/api/v1/signup`, {
      body: { email },
      headers: { "x-forwarded-for": client() },
    });
    const link = new URL(reclaimLink((await smtp.mailTo(email)).raw));
    const token = link.searchParams.get("token")!;
    const madeUp = `${token.split(".")[0]}.${"A".repeat(43)}`;
    expect((await pressButton(madeUp)).status).toBe(400);
    const crossSite = await fetch(`${gw.url}/dashboard/reclaim`, {
      method: "POST",
      redirect: "manual",
      headers: { ...asBrowser, "sec-fetch-site": "cross-site", "x-forwarded-for": client() },
      body: new URLSearchParams({ token }).toString(),
    });
    expect(crossSite.status).toBe(403);
    expect(await keyWorks(signup.body.api_key)).toBe(true);
  });

  it("leaves no single sign-on set up by a request that was on its way when the account was taken back", async () => {
    const { key, token } = await squatted(`owner-${randomId(8)}@example.com`, "business");
    const domain = `squat-${randomId(6)}.example`;
    idp.delayDiscovery(1500); // the squatter's own provider answers slowly
    try {
      const put = putSso(gw.url, key, idp.settings([domain]));
      await new Promise((r) => setTimeout(r, 300));
      const taken = await pressButton(token);
      expect(taken.status).toBe(303);
      const answer = await put;
      expect([answer.status, answer.body.error?.code]).toEqual([401, "api_key_revoked"]);
      const ownerCookie = (taken.headers.get("set-cookie") ?? "").split(";")[0]!;
      const sso = await call(`${gw.url}/dashboard/api/v1/account/sso`, {
        headers: { cookie: ownerCookie },
      });
      expect(sso.status).toBe(404);
      // The domain is free again: nobody signs in to the owner's account through it.
      expect(await gw.services.store.accountIdBySsoDomain(domain)).toBeNull();
    } finally {
      idp.delayDiscovery(0);
    }
  });

  it("leaves no working key made while the account is taken back, with a key it had not revoked yet", async () => {
    const { accountId, key, token } = await squatted(`owner-${randomId(8)}@example.com`, "pro");
    const keys = [key];
    // The squatter makes a key just after the take-back has listed the account's keys, with a
    // key still working then: the moment a slower take-back, or a busier gateway, leaves open.
    const store = gw.services.store;
    const listKeys = store.listKeys;
    store.listKeys = async (id) => {
      const listed = await listKeys.call(store, id);
      if (id === accountId && keys.length === 1) {
        const made = await call(`${gw.url}/api/v1/keys`, { key, body: {} });
        expect(made.status).toBe(201);
        keys.push(made.body.key);
      }
      return listed;
    };
    try {
      expect((await pressButton(token)).status).toBe(303);
    } finally {
      store.listKeys = listKeys;
    }
    expect(keys).toHaveLength(2);
    for (const k of keys) expect(await keyWorks(k)).toBe(false);
  });
});
