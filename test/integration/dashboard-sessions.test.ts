import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomId } from "../../src/lib/ids.js";
import {
  call,
  fundedAccount,
  requestSignInLink,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";
import { freshDatabase } from "../helpers/postgres.js";
import { startSmtpServer } from "../helpers/smtp.js";

/**
 * Dashboard sessions over plain HTTP against real gateways on Redis: what the cookie says, when a
 * session ends (idle, absolute, sign-out), the limits on the unauthenticated sign-in endpoints,
 * and the live feed's stream. The browser-level behaviour is in test/browser/dashboard-in-chromium.test.ts.
 */
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
let gw: TestGateway;

beforeAll(async () => {
  smtp = await startSmtpServer();
  gw = await startGateway({
    env: {
      SMTP_URL: smtp.url,
      ENDPOINT_LIMITS:
        "dashboard-sign-in=4/60,dashboard-sign-in-link=2/3600,dashboard-sign-in-link-recipient=2/3600",
    },
  });
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  await smtp?.stop();
});

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/** Posts the sign-in form as a browser on this site would; returns the answer and the session cookie it set, if any. */
async function signIn(
  url: string,
  apiKey: string,
  client = `10.7.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`,
) {
  const res = await fetch(`${url}/dashboard/sign-in`, {
    method: "POST",
    redirect: "manual",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "sec-fetch-site": "same-origin",
      "x-forwarded-for": client,
    },
    body: form({ api_key: apiKey }),
  });
  const setCookie = res.headers.get("set-cookie") ?? "";
  return { res, setCookie, cookie: setCookie.split(";")[0]! };
}

const account = (url: string, cookie: string) =>
  call(`${url}/dashboard/api/v1/account`, { headers: { cookie } });

describe("dashboard sessions", () => {
  it("signs in with a key: an HttpOnly, SameSite=Lax session cookie (not Secure outside production) that opens the dashboard API", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 40, "free");
    const { res, setCookie, cookie } = await signIn(gw.url, key);
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/dashboard");
    expect(setCookie).toMatch(
      /^tg_session=acct_[0-9a-z]{16}\.[A-Za-z0-9_-]{43}; Max-Age=43200; Path=\/; HttpOnly; SameSite=Lax$/,
    );
    const me = await account(gw.url, cookie);
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id: accountId, credits: 40 });
  });

  it("refuses a revoked or unknown key on the sign-in form with the API's reason, and a sign-in form posted from another site", async () => {
    const { key, keyId } = await fundedAccount(gw.url, 40, "free");
    await call(`${gw.url}/api/v1/keys/${keyId}?force=true`, { method: "DELETE", key });
    const revoked = await signIn(gw.url, key);
    expect(revoked.res.status).toBe(401);
    expect(await revoked.res.text()).toContain("The API key has been revoked.");
    expect(revoked.setCookie).toBe("");
    // A key cut short when copied: the page says what a whole key looks like (it said "it starts
    // with tg_" of a key that did).
    const cut = await signIn(gw.url, key.slice(0, -3));
    expect(cut.res.status).toBe(401);
    expect(await cut.res.text()).toContain(
      "That is not a whole API key: a key is tg_live_, 16 letters or digits, _ and 32 more. Paste all of it.",
    );
    // Another site, by Sec-Fetch-Site or (a browser without it) by Origin: another host, or
    // "null", what a sandboxed frame or a data: page sends.
    const fromElsewhere: Record<string, string>[] = [
      { "sec-fetch-site": "cross-site" },
      { origin: "https://evil.example" },
      { origin: "null" },
    ];
    for (const [i, says] of fromElsewhere.entries()) {
      const res = await fetch(`${gw.url}/dashboard/sign-in`, {
        method: "POST",
        redirect: "manual",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          "x-forwarded-for": `10.6.0.${i + 1}`,
          ...says,
        },
        body: form({ api_key: key }),
      });
      expect([says, res.status]).toEqual([says, 403]);
      expect(await res.text()).toContain("Sign-in forms are accepted from this site");
    }
  });

  it("ends a session opened with a key once that key is revoked or given controls", async () => {
    const { key, keyId, accountId } = await fundedAccount(gw.url, 40, "free");
    const spare = await call(`${gw.url}/api/v1/keys`, { body: { name: "spare" }, key });
    expect(spare.status).toBe(201);
    const { key: spareKey, id: spareId } = spare.body as { key: string; id: string };

    // Revoked (with the spare key, as another device would): the session opened with it ends.
    const revokedSession = await signIn(gw.url, key);
    const untouched = await signIn(gw.url, spareKey);
    expect((await account(gw.url, revokedSession.cookie)).status).toBe(200);
    expect(
      (await call(`${gw.url}/api/v1/keys/${keyId}`, { method: "DELETE", key: spareKey })).status,
    ).toBe(200);
    const after = await account(gw.url, revokedSession.cookie);
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe("session_required");
    const page = await fetch(`${gw.url}/dashboard`, {
      headers: { cookie: revokedSession.cookie },
      redirect: "manual",
    });
    expect(page.headers.get("location")).toBe("/dashboard/sign-in");
    // A session opened with another key of the account goes on.
    expect((await account(gw.url, untouched.cookie)).body).toMatchObject({ id: accountId });

    // Given controls (an expiry): the key now opens no session, so the one it opened ends. (With
    // a third key without controls: the account's last active key takes no controls, 409.)
    expect((await call(`${gw.url}/api/v1/keys`, { body: {}, key: spareKey })).status).toBe(201);
    const limited = await call(`${gw.url}/api/v1/keys/${spareId}`, {
      method: "PATCH",
      key: spareKey,
      body: { expires_at: new Date(Date.now() + 86_400_000).toISOString() },
    });
    expect(limited.status).toBe(200);
    expect((await account(gw.url, untouched.cookie)).status).toBe(401);
  });

  it("signs out a session that has already ended with one cookie-clearing header, not two", async () => {
    const { key } = await fundedAccount(gw.url, 30, "free");
    const { cookie } = await signIn(gw.url, key);
    const page = await (await fetch(`${gw.url}/dashboard`, { headers: { cookie } })).text();
    const csrf = /name="csrf-token" content="([^"]+)"/.exec(page)![1]!;
    const signOut = () =>
      fetch(`${gw.url}/dashboard/sign-out`, {
        method: "POST",
        redirect: "manual",
        headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
        body: form({ _csrf: csrf }),
      });
    // Live, then ended (a second tab, a double click): each answer clears the cookie once.
    for (const answer of [await signOut(), await signOut()]) {
      expect(answer.status).toBe(303);
      expect(answer.headers.get("location")).toBe("/dashboard/sign-in?notice=signed_out");
      expect(answer.headers.getSetCookie()).toEqual([
        "tg_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Lax",
      ]);
    }
  });

  it("answers 405 with Allow for another method on the sign-in and sign-out paths", async () => {
    const put = await fetch(`${gw.url}/dashboard/sign-in`, { method: "PUT" });
    expect(put.status).toBe(405);
    expect(put.headers.get("allow")).toContain("POST");
    expect((await fetch(`${gw.url}/dashboard/sign-out`)).status).toBe(405);
  });

  it("limits sign-in attempts per client address: 429 with Retry-After once spent", async () => {
    const client = `10.5.${Math.floor(Math.random() * 250)}.1`;
    for (let i = 0; i < 4; i++)
      expect((await signIn(gw.url, `tg_live_not_a_key_${i}`, client)).res.status).toBe(401);
    const limited = await signIn(gw.url, "tg_live_not_a_key", client);
    expect(limited.res.status).toBe(429);
    expect(Number(limited.res.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await limited.res.text()).toContain("dashboard sign-in attempts");
  });

  it("e-mails a sign-in link only to an address with an account, answering both alike, and limits the e-mails without telling who has one", async () => {
    const post = (email: string, client: string) => requestSignInLink(gw.url, email, client);
    const email = `links-${randomId(8)}@example.com`;
    await call(`${gw.url}/api/v1/signup`, {
      body: { email },
      headers: { "x-forwarded-for": `10.4.${Math.floor(Math.random() * 250)}.1` },
    });
    // Sign-up sends its verification e-mail beside its answer: counted before the links are.
    await expect.poll(() => smtp.mails.some((m) => m.to.includes(email))).toBe(true);
    const before = smtp.mails.length;
    const known = await post(email, "10.3.0.1");
    const unknown = await post(`nobody-${randomId(8)}@example.com`, "10.3.0.2");
    expect([known.status, unknown.status]).toEqual([200, 200]);
    const [knownText, unknownText] = [await known.text(), await unknown.text()];
    expect(knownText).toContain("If an account uses this address, a sign-in link is on its way");
    expect(unknownText.replace(/value="[^"]*"/, "")).toBe(knownText.replace(/value="[^"]*"/, ""));
    // The link is sent beside the answer: wait for it (a loaded machine took longer than 300 ms),
    // then a moment more for any e-mail that should not have been sent.
    await expect.poll(() => smtp.mails.length - before, { timeout: 10_000 }).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 300));
    const sent = smtp.mails.slice(before);
    expect(sent.map((m) => m.to)).toEqual([[email]]);
    expect(sent[0]!.raw).toContain("/dashboard/sign-in/link?token=");
    // Per recipient (whatever the client address), counted alike whether or not the address has
    // an account, and never refused aloud: past the limit, the same answer and no e-mail.
    const nobody = `nobody-${randomId(8)}@example.com`;
    const pastLimit: Response[] = [];
    for (const [to, client] of [
      [email, "10.3.0.3"],
      [email, "10.3.0.4"],
      [nobody, "10.3.0.5"],
      [nobody, "10.3.0.6"],
      [nobody, "10.3.0.7"],
    ] as const)
      pastLimit.push(await post(to, client));
    expect(pastLimit.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const [knownPast, unknownPast] = [await pastLimit[1]!.text(), await pastLimit[4]!.text()];
    expect(unknownPast.replace(/value="[^"]*"/, "")).toBe(knownPast.replace(/value="[^"]*"/, ""));
    await expect.poll(() => smtp.mails.length - before, { timeout: 10_000 }).toBeGreaterThan(1);
    await new Promise((r) => setTimeout(r, 300));
    // Two links in all to the account's address: the first, and the one the limit still allowed.
    expect(smtp.mails.slice(before).map((m) => m.to)).toEqual([[email], [email]]);
    // Per client address, a 429 (it says nothing about the recipient).
    const sameClient = "10.3.0.8";
    await post(`a-${randomId(6)}@example.com`, sameClient);
    await post(`b-${randomId(6)}@example.com`, sameClient);
    const limited = await post(`c-${randomId(6)}@example.com`, sameClient);
    expect(limited.status).toBe(429);
    expect(await limited.text()).toContain("per client address");
  });

  it("ends a session unused for the idle time, and a used one at its absolute expiry", async () => {
    const short = await startGateway({
      prefix: gw.prefix,
      env: { DASHBOARD_SESSION_IDLE_MINUTES: "0.03", DASHBOARD_SESSION_MAX_HOURS: "0.0015" },
    });
    try {
      const { key } = await fundedAccount(short.url, 40, "free");
      const idle = await signIn(short.url, key);
      await new Promise((r) => setTimeout(r, 2500)); // idle time: 1.8 s
      expect((await account(short.url, idle.cookie)).body.error.code).toBe("session_required");

      const busy = await signIn(short.url, key);
      const openedAt = Date.now();
      const seen: number[] = [];
      while (Date.now() - openedAt < 6500) {
        seen.push((await account(short.url, busy.cookie)).status);
        await new Promise((r) => setTimeout(r, 400)); // used every 0.4 s: never idle
      }
      expect(seen.slice(0, 6)).toEqual(Array(6).fill(200)); // 2.4 s and more: past the idle time, alive
      expect(seen.at(-1)).toBe(401); // absolute expiry: 5.4 s, however busy
    } finally {
      await short.stop();
    }
  });

  it("lets an open live feed keep no session alive: unused for the idle time, the session and its feed end", async () => {
    const short = await startGateway({
      prefix: gw.prefix,
      env: { DASHBOARD_SESSION_IDLE_MINUTES: "0.03" }, // 1.8 s
    });
    try {
      const { key } = await fundedAccount(short.url, 40, "free");
      const { cookie } = await signIn(short.url, key);
      const res = await fetch(`${short.url}/dashboard/live`, { headers: { cookie } });
      expect(res.status).toBe(200);
      const opened = Date.now();
      await res.text(); // the whole stream: it ends by itself
      // Checked between waits of 2.5 s: the first check after the idle time ends it.
      expect(Date.now() - opened).toBeLessThan(6_000);
      expect((await account(short.url, cookie)).status).toBe(401);
    } finally {
      await short.stop();
    }
  });

  it("holds at most 5 live feeds per account, leaving room for other accounts", async () => {
    const { key } = await fundedAccount(gw.url, 40, "free");
    const { cookie } = await signIn(gw.url, key);
    const other = await signIn(gw.url, (await fundedAccount(gw.url, 40, "free")).key);
    const stop = new AbortController();
    const open = (c: string) =>
      fetch(`${gw.url}/dashboard/live`, { headers: { cookie: c }, signal: stop.signal });
    try {
      const five = await Promise.all(Array.from({ length: 5 }, () => open(cookie)));
      expect(five.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
      const sixth = await open(cookie);
      expect(sixth.status).toBe(429);
      expect(sixth.headers.get("retry-after")).toBe("10");
      expect(((await sixth.json()) as { error: { message: string } }).error.message).toContain(
        "At most 5 live dashboards per account",
      );
      expect((await open(other.cookie)).status).toBe(200);
    } finally {
      stop.abort();
    }
  });

  it("holds at most 20 live feeds per client address, so throwaway accounts cannot take them all", async () => {
    const cookies = await Promise.all(
      Array.from(
        { length: 5 },
        async () => (await signIn(gw.url, (await fundedAccount(gw.url, 40, "free")).key)).cookie,
      ),
    );
    const stop = new AbortController();
    const open = (cookie: string, from: string) =>
      fetch(`${gw.url}/dashboard/live`, {
        headers: { cookie, "x-forwarded-for": from },
        signal: stop.signal,
      });
    try {
      const twenty = await Promise.all(
        cookies.slice(0, 4).flatMap((c) => Array.from({ length: 5 }, () => open(c, "10.9.0.1"))),
      );
      expect(twenty.every((r) => r.status === 200)).toBe(true);
      const more = await open(cookies[4]!, "10.9.0.1");
      expect(more.status).toBe(429);
      expect(((await more.json()) as { error: { message: string } }).error.message).toContain(
        "At most 20 live dashboards per client address",
      );
      expect((await open(cookies[4]!, "10.9.0.2")).status).toBe(200);
    } finally {
      stop.abort();
    }
  });

  it("streams the ledger to a signed-in page, and ends the stream once the session is signed out", async () => {
    const { key } = await fundedAccount(gw.url, 40, "free");
    const { cookie } = await signIn(gw.url, key);
    const unauthenticated = await fetch(`${gw.url}/dashboard/live`);
    expect(unauthenticated.status).toBe(401);
    const res = await fetch(`${gw.url}/dashboard/live`, { headers: { cookie } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    const readUntil = async (pattern: RegExp, timeoutMs: number) => {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(text)) {
        const chunk = await Promise.race([
          reader.read(),
          new Promise<null>((r) => setTimeout(() => r(null), Math.max(0, deadline - Date.now()))),
        ]);
        if (chunk === null) throw new Error(`timed out waiting for ${pattern} in:\n${text}`);
        if (chunk.done) return "ended";
        text += decoder.decode(chunk.value);
      }
      return "matched";
    };
    expect(
      (await call(`${gw.url}/v1/tools/hash`, { body: { text: "streamed" }, key })).status,
    ).toBe(200);
    await readUntil(/event: ledger\ndata: \{[^\n]*"kind":"debit"[^\n]*"tool":"hash"/, 3000);

    const csrfPage = await (await fetch(`${gw.url}/dashboard`, { headers: { cookie } })).text();
    const csrf = /name="csrf-token" content="([^"]+)"/.exec(csrfPage)![1]!;
    const out = await fetch(`${gw.url}/dashboard/sign-out`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      body: form({ _csrf: csrf }),
    });
    expect(out.status).toBe(303);
    expect(out.headers.get("set-cookie")).toMatch(/^tg_session=; Max-Age=0/);
    // The key still calls; the ended session's feed shows nothing more (it sent the next entry
    // before noticing the sign-out).
    const signedOut = text.length;
    expect(
      (await call(`${gw.url}/v1/tools/hash`, { body: { text: "after sign-out" }, key })).status,
    ).toBe(200);
    expect(await readUntil(/$^/, 6000)).toBe("ended");
    expect(text.slice(signedOut)).not.toContain("event: ledger");
  });
});

describe("the keys page", () => {
  it("offers Rotate only on an active key: not on one rotating already (its grace running), which would be 409", async () => {
    const { key } = await fundedAccount(gw.url, 40, "free");
    const { cookie } = await signIn(gw.url, key);
    const spare = await call(`${gw.url}/api/v1/keys`, { key, body: { name: "spare" } });
    const rotated = await call(`${gw.url}/api/v1/keys/${spare.body.id}/rotate`, {
      key,
      body: { grace_seconds: 3600 },
    });
    expect(rotated.status).toBe(201);
    const html = await (await fetch(`${gw.url}/dashboard/keys`, { headers: { cookie } })).text();
    const row = (id: string) =>
      new RegExp(`<tr data-key-id="${id}">.*?</tr>`).exec(html)?.[0] ?? "";
    expect(row(spare.body.id)).toContain("expiring");
    expect(row(spare.body.id)).not.toContain('data-action="rotate-key"');
    expect(row(spare.body.id)).toContain('data-action="revoke-key"');
    expect(row(rotated.body.id)).toContain('data-action="rotate-key"');
  });
});

describe("the live feed with the books exporting", () => {
  it("resumes after an id with what came since, though the export has trimmed it from the store", async () => {
    const books = await startGateway({
      env: { DATABASE_URL: await freshDatabase(), BOOKS_EXPORT_INTERVAL_MS: "100" },
    });
    try {
      const { key } = await fundedAccount(books.url, 40, "free");
      const { cookie } = await signIn(books.url, key);
      const newest = async () =>
        (await call(`${books.url}/api/v1/usage?limit=1`, { key })).body.data[0].id as string;
      const seen = await newest();
      // Two calls while no stream is open (a page between its render and its stream, or a
      // reconnection's wait), then long enough for the export to trim them from the store.
      for (const text of ["gap 1", "gap 2"])
        expect((await call(`${books.url}/v1/tools/hash`, { body: { text }, key })).status).toBe(
          200,
        );
      const made = (await call(`${books.url}/api/v1/usage?limit=2`, { key })).body.data
        .map((e: { id: string }) => e.id)
        .reverse();
      await new Promise((r) => setTimeout(r, 1500));
      const res = await fetch(`${books.url}/dashboard/live`, {
        headers: { cookie, "last-event-id": seen },
      });
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let text = "";
      const deadline = Date.now() + 4000;
      while ((text.match(/event: ledger/g) ?? []).length < 2 && Date.now() < deadline) {
        const chunk = await Promise.race([
          reader.read(),
          new Promise<null>((r) => setTimeout(() => r(null), 500)),
        ]);
        if (chunk?.done) break;
        if (chunk) text += decoder.decode(chunk.value);
      }
      await reader.cancel();
      expect([...text.matchAll(/^id: (\S+)$/gm)].map((m) => m[1])).toEqual(made);
      expect(await newest()).toBe(made[1]);
    } finally {
      await books.stop();
    }
  }, 90_000);
});

describe("dashboard sessions in production", () => {
  it("sets the cookie Secure, with the __Host- prefix", async () => {
    const prod = await startGateway({
      env: {
        NODE_ENV: "production",
        SECRET_KEY: "p".repeat(32),
        PUBLIC_BASE_URL: "https://toolgate.example",
        SMTP_URL: smtp.url,
        MAIL_FROM: "Toolgate <no-reply@toolgate.example>",
      },
    });
    try {
      const { key } = await fundedAccount(prod.url, 30, "free");
      const { setCookie } = await signIn(prod.url, key);
      expect(setCookie).toMatch(
        /^__Host-tg_session=acct_[^;]+; Max-Age=43200; Path=\/; HttpOnly; Secure; SameSite=Lax$/,
      );
    } finally {
      await prod.stop();
    }
  });
});
