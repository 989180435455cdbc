import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";
import { putSso, startOidcProvider, type TestOidcProvider } from "../helpers/oidc-provider.js";
import { freePort } from "../helpers/ports.js";
import { REDIS_URL } from "../helpers/redis.js";
import { startReceiver } from "../helpers/receiver.js";

/**
 * Single sign-on over plain HTTP, against a real OpenID Connect provider (`oidc-provider`, over
 * HTTPS with the test CA) and a real gateway on Redis: the account/sso API (Business only, SSRF
 * guard, discovery checked on save, secret never returned), and the sign-in itself — the start, the
 * provider's login and consent (driven over HTTP), the callback — with every refusal the callback
 * owes: wrong state, another browser, a replay, a domain not allowed, an unverified address, an ID
 * token whose signature does not verify. The same flow in Chromium is in
 * test/browser/sso-in-chromium.test.ts.
 */
let gw: TestGateway;
let idp: TestOidcProvider;
let strict: TestGateway;

beforeAll(async () => {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  idp = await startOidcProvider({ redirectUri: `${base}/dashboard/sso/callback` });
  const env = { SECRET_KEY: "s".repeat(32), ENDPOINT_LIMITS: "dashboard-sso=200/60" };
  gw = await startGateway({
    env: { ...env, PORT: String(port), PUBLIC_BASE_URL: base, SSO_ALLOW_PRIVATE_TARGETS: "1" },
  });
  // Without the development switch: what production does with a loopback issuer.
  strict = await startGateway({ env });
}, 90_000);
afterAll(async () => {
  await strict?.stop();
  await gw?.stop();
  await idp?.stop();
});

let domainCount = 0;
/** A Business account with SSO set up for a fresh domain (domains are one account's alone). */
async function businessWithSso() {
  const account = await fundedAccount(gw.url, 100);
  const domain = `acme-${Date.now().toString(36)}-${domainCount++}.example`;
  const saved = await putSso(gw.url, account.key, idp.settings([domain]));
  return { ...account, domain, saved };
}

/** A browser's start: the sign-in form posted from this site; the provider URL the page goes on to, and the attempt cookie. */
async function start(given: string, client = "10.9.0.1") {
  const res = await fetch(`${gw.url}/dashboard/sign-in/sso`, {
    method: "POST",
    redirect: "manual",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "sec-fetch-site": "same-origin",
      "x-forwarded-for": client,
    },
    body: new URLSearchParams({ sso: given }),
  });
  const page = await res.text();
  const link = /<a id="sso-continue" href="([^"]+)"/.exec(page)?.[1] ?? "";
  return {
    res,
    page,
    location: link.replace(/&amp;/g, "&"),
    cookie: (res.headers.get("set-cookie") ?? "").split(";")[0]!,
  };
}

/** The provider's redirect back, opened with `cookie`: the answer, its page, and the session cookie it set (if any). */
async function callback(url: string, cookie: string) {
  const res = await fetch(url, { redirect: "manual", headers: { cookie } });
  const session = res.headers
    .getSetCookie()
    .find((c) => c.startsWith("tg_session="))
    ?.split(";")[0];
  return { res, page: await res.text(), session };
}

describe("single sign-on with OpenID Connect", () => {
  it("sets up SSO for a Business account — secret sealed and never returned — and signs a member in to a dashboard session", async () => {
    const { key, accountId, domain, saved } = await businessWithSso();
    expect(saved.status).toBe(200);
    expect(saved.body).toMatchObject({
      issuer: idp.issuer,
      client_id: idp.clientId,
      client_secret_set: true,
      email_domains: [domain],
      redirect_uri: `${gw.url}/dashboard/sso/callback`,
    });
    expect(JSON.stringify(saved.body)).not.toContain(idp.clientSecret);
    const read = await call(`${gw.url}/api/v1/account/sso`, { key });
    expect(read.body).toEqual(saved.body);
    const stored = await gw.services.store.getSsoConnection(accountId);
    expect(stored?.sealedClientSecret).toMatch(/^v1\./);
    expect(stored?.sealedClientSecret).not.toContain(idp.clientSecret);

    const { res, page, location, cookie } = await start(`ana@${domain}`);
    expect(res.status).toBe(200);
    expect(page).toContain(
      `<meta http-equiv="refresh" content="0;url=${location.replace(/&/g, "&amp;")}">`,
    );
    const authorization = new URL(location);
    expect(authorization.origin).toBe(idp.issuer);
    expect(Object.fromEntries(authorization.searchParams)).toMatchObject({
      client_id: idp.clientId,
      response_type: "code",
      scope: "openid email",
      redirect_uri: `${gw.url}/dashboard/sso/callback`,
      code_challenge_method: "S256",
    });
    for (const check of ["state", "nonce", "code_challenge"])
      expect(authorization.searchParams.get(check)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(cookie).toBe(`tg_sso=${authorization.searchParams.get("state")}`);

    const back = await idp.completeSignIn(location, `ana@${domain}`);
    expect(back.startsWith(`${gw.url}/dashboard/sso/callback?code=`)).toBe(true);
    const done = await callback(back, cookie);
    expect(done.res.status).toBe(303);
    expect(done.res.headers.get("location")).toBe("/dashboard");
    expect(done.session).toMatch(/^tg_session=acct_/);
    const me = await call(`${gw.url}/dashboard/api/v1/account`, {
      headers: { cookie: done.session! },
    });
    expect(me.body).toMatchObject({ id: accountId, tier: "business" });
    // The session is the dashboard's only: the API still wants a key.
    expect(
      (await call(`${gw.url}/api/v1/account`, { headers: { cookie: done.session! } })).status,
    ).toBe(401);
    // The account id works on the form as well as the domain.
    expect((await start(accountId)).location.startsWith(idp.issuer)).toBe(true);
  });

  it("keeps SSO to the Business tier: a Free or Pro account gets 403 feature_not_in_tier naming Business", async () => {
    for (const tier of ["free", "pro"]) {
      const { key } = await fundedAccount(gw.url, 100, tier);
      const put = await putSso(gw.url, key, idp.settings([`${tier}-tier.example`]));
      expect(put.status).toBe(403);
      expect(put.body.error).toMatchObject({
        code: "feature_not_in_tier",
        required_tier: "business",
      });
      expect((await call(`${gw.url}/api/v1/account/sso`, { key })).status).toBe(403);
      expect(await gw.services.store.accountIdBySsoDomain(`${tier}-tier.example`)).toBeNull();
    }
  });

  it("refuses an issuer that is not HTTPS, a loopback issuer without the development switch, and a server that is no OpenID provider", async () => {
    const put = (url: string, key: string, issuer: string) =>
      putSso(url, key, { ...idp.settings(["refused.example"]), issuer });
    const { key } = await fundedAccount(gw.url, 100);
    const http = await put(gw.url, key, idp.issuer.replace("https:", "http:"));
    expect(http.status).toBe(422);
    expect(http.body.error).toMatchObject({ code: "validation_failed", param: "issuer" });
    expect(http.body.error.message).toContain("must use https");

    const strictAccount = await fundedAccount(strict.url, 100);
    const loopback = await put(strict.url, strictAccount.key, idp.issuer);
    expect(loopback.status).toBe(422);
    expect(loopback.body.error.message).toContain("localhost does not resolve to a public address");

    const notAProvider = await startReceiver();
    try {
      const plain = await put(gw.url, key, notAProvider.url("/"));
      expect(plain.status).toBe(422);
      expect(plain.body.error.message).toMatch(
        /^The issuer's OpenID Connect configuration could not be read/,
      );
    } finally {
      await notAProvider.stop();
    }
    expect((await call(`${gw.url}/api/v1/account/sso`, { key })).status).toBe(404);
  });

  it("gives each e-mail domain to one account: another account's claim is 409 sso_domain_taken; turning SSO off releases it", async () => {
    const first = await businessWithSso();
    const other = await fundedAccount(gw.url, 100);
    const body = idp.settings([first.domain]);
    const taken = await putSso(gw.url, other.key, body);
    expect(taken.status).toBe(409);
    expect(taken.body.error).toMatchObject({ code: "sso_domain_taken", param: "email_domains" });
    const off = await call(`${gw.url}/api/v1/account/sso`, { method: "DELETE", key: first.key });
    expect(off.body).toEqual({ deleted: true });
    expect((await call(`${gw.url}/api/v1/account/sso`, { key: first.key })).status).toBe(404);
    expect((await start(`ana@${first.domain}`)).res.status).toBe(404);
    const now = await putSso(gw.url, other.key, body);
    expect(now.status).toBe(200);
  });

  it("ends a session opened by single sign-on once the connection it came through is removed or set up anew, not when its settings change", async () => {
    const { key, domain } = await businessWithSso();
    const signIn = async () => {
      const attempt = await start(`ana@${domain}`);
      const done = await callback(
        await idp.completeSignIn(attempt.location, `ana@${domain}`),
        attempt.cookie,
      );
      expect(done.res.status).toBe(303);
      return done.session!;
    };
    const works = async (session: string) =>
      (await call(`${gw.url}/dashboard/api/v1/account`, { headers: { cookie: session } })).status;
    const before = await signIn();
    expect(await works(before)).toBe(200);
    // Its settings changed: the session goes on.
    expect((await putSso(gw.url, key, idp.settings([domain]))).status).toBe(200);
    expect(await works(before)).toBe(200);
    // Removed and set up anew (as a take-back's race could leave it for a moment): it ends.
    expect((await call(`${gw.url}/api/v1/account/sso`, { method: "DELETE", key })).status).toBe(
      200,
    );
    expect((await putSso(gw.url, key, idp.settings([domain]))).status).toBe(200);
    expect(await works(before)).toBe(401);
    const after = await signIn();
    expect(await works(after)).toBe(200);
    expect((await call(`${gw.url}/api/v1/account/sso`, { method: "DELETE", key })).status).toBe(
      200,
    );
    expect(await works(after)).toBe(401);
  });

  it.each([
    ["removed and set up anew", true],
    ["turned off", false],
  ])(
    "keeps a session an earlier release opened by single sign-on (no connection recorded) while its connection is the account's; ends it once the connection is %s",
    async (_, again) => {
      const { key, domain } = await businessWithSso();
      const attempt = await start(`ana@${domain}`);
      const { session } = await callback(
        await idp.completeSignIn(attempt.location, `ana@${domain}`),
        attempt.cookie,
      );
      // The record as releases before sessions named their connection wrote it (a rolling upgrade
      // serves those beside this one's).
      const accountId = session!.slice(session!.indexOf("=") + 1, session!.indexOf("."));
      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`${gw.prefix}{${accountId}}:session:*`);
      expect(keys).toHaveLength(1);
      expect(await redis.hdel(keys[0]!, "sso_at")).toBe(1);
      await redis.quit();
      const works = async () =>
        (await call(`${gw.url}/dashboard/api/v1/account`, { headers: { cookie: session! } }))
          .status;
      expect(await works()).toBe(200);
      // It ends as a session that names its connection does.
      expect((await call(`${gw.url}/api/v1/account/sso`, { method: "DELETE", key })).status).toBe(
        200,
      );
      if (again) expect((await putSso(gw.url, key, idp.settings([domain]))).status).toBe(200);
      expect(await works()).toBe(401);
    },
  );

  it("refuses a sign-in whose connection was removed and set up anew while the provider redeemed its code", async () => {
    const { key, domain } = await businessWithSso();
    const attempt = await start(`ana@${domain}`);
    const back = await idp.completeSignIn(attempt.location, `ana@${domain}`);
    idp.delayToken(800);
    try {
      const pending = callback(back, attempt.cookie);
      await new Promise((r) => setTimeout(r, 300));
      // Another connection with the same issuer and client: not the one the sign-in started under.
      expect((await call(`${gw.url}/api/v1/account/sso`, { method: "DELETE", key })).status).toBe(
        200,
      );
      expect((await putSso(gw.url, key, idp.settings([domain]))).status).toBe(200);
      const done = await pending;
      expect(done.res.status).toBe(401);
      expect(done.page).toContain("changed or turned off during the sign-in");
      expect(done.session).toBeUndefined();
    } finally {
      idp.delayToken(0);
    }
  });

  it("refuses a callback with a state it did not hand out, one opened in another browser, and a replayed one; none opens a session", async () => {
    const { domain } = await businessWithSso();
    const first = await start(`ana@${domain}`);
    const back = await idp.completeSignIn(first.location, `ana@${domain}`);

    const forged = new URL(back);
    forged.searchParams.set("state", "x".repeat(43));
    const wrongState = await callback(forged.href, first.cookie);
    expect(wrongState.res.status).toBe(401);
    expect(wrongState.page).toContain("This sign-in was not started in this browser");
    expect(wrongState.session).toBeUndefined();

    const elsewhere = await callback(back, "");
    expect(elsewhere.res.status).toBe(401);
    expect(elsewhere.session).toBeUndefined();

    const used = await callback(back, first.cookie);
    expect(used.res.status).toBe(303);
    expect(used.session).toBeDefined();
    const replayed = await callback(back, first.cookie);
    expect(replayed.res.status).toBe(401);
    expect(replayed.page).toContain("expired or was used already");
    expect(replayed.session).toBeUndefined();
  });

  it("refuses an address outside the account's domains and one the provider marks unverified, as a boolean or as text", async () => {
    const { domain } = await businessWithSso();
    for (const [login, reason] of [
      ["mallory@other.example", "single sign-on is open to addresses at"],
      [`unverified@${domain}`, "is not verified"],
      [`text-unverified@${domain}`, "is not verified"],
    ] as const) {
      const attempt = await start(`ana@${domain}`);
      const refused = await callback(
        await idp.completeSignIn(attempt.location, login),
        attempt.cookie,
      );
      expect(refused.res.status).toBe(401);
      expect(refused.page).toContain(reason);
      expect(refused.session).toBeUndefined();
    }
    // The flag as the text "true" is a verified address.
    const attempt = await start(`ana@${domain}`);
    const done = await callback(
      await idp.completeSignIn(attempt.location, `text-verified@${domain}`),
      attempt.cookie,
    );
    expect([done.res.status, done.session]).toEqual([303, expect.stringMatching(/^tg_session=/)]);
  });

  it("refuses an ID token whose signature does not verify against the provider's published keys, though it came over TLS", async () => {
    const { domain } = await businessWithSso();
    const attempt = await start(`ana@${domain}`);
    const back = await idp.completeSignIn(attempt.location, `ana@${domain}`);
    idp.publishForeignKeys(true);
    try {
      const refused = await callback(back, attempt.cookie);
      expect(refused.res.status).toBe(401);
      expect(refused.page).toContain("answer was refused");
      expect(refused.session).toBeUndefined();
    } finally {
      idp.publishForeignKeys(false);
    }
  });

  it("counts SSO attempts against the dashboard-sso limit per client address", async () => {
    const { domain } = await businessWithSso();
    const limited = await startGateway({
      prefix: gw.prefix,
      env: {
        SECRET_KEY: "s".repeat(32),
        SSO_ALLOW_PRIVATE_TARGETS: "1",
        ENDPOINT_LIMITS: "dashboard-sso=2/60",
      },
    });
    try {
      const post = (sso = domain, from = "10.9.9.9") =>
        fetch(`${limited.url}/dashboard/sign-in/sso`, {
          method: "POST",
          redirect: "manual",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            "sec-fetch-site": "same-origin",
            "x-forwarded-for": from,
          },
          body: new URLSearchParams({ sso }),
        });
      expect((await post()).status).toBe(200);
      expect((await post()).status).toBe(200);
      const third = await post();
      expect(third.status).toBe(429);
      expect(third.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(await third.text()).toContain("single sign-on attempts");
      // Domains no account uses count too: else the answers would list, without limit, which
      // companies sign in with SSO here.
      expect((await post("nobody-1.example", "10.9.9.10")).status).toBe(404);
      expect((await post("nobody-2.example", "10.9.9.10")).status).toBe(404);
      expect((await post("nobody-3.example", "10.9.9.10")).status).toBe(429);
    } finally {
      await limited.stop();
    }
  });
});
