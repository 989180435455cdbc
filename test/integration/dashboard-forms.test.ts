import { parseHTML } from "linkedom";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";
import { startSmtpServer } from "../helpers/smtp.js";

/**
 * The dashboard's HTML forms (sign-in by key, by e-mailed link, by SSO, and sign-out) over plain
 * HTTP against a real gateway on Redis, when the form's body cannot be read or the page is stale:
 * a person who posted it is answered the page, with the status and a message to act on — never the
 * API's JSON — and an unreadable form still counts against the endpoint's limit.
 */
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
let gw: TestGateway;

beforeAll(async () => {
  smtp = await startSmtpServer();
  gw = await startGateway({
    env: {
      SMTP_URL: smtp.url,
      ENDPOINT_LIMITS: "dashboard-sign-in=3/60,dashboard-sign-in-link=3/3600,dashboard-sso=3/60",
    },
  });
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  await smtp?.stop();
});

let clients = 0;
/** A client address of its own, so each test spends its own limits. */
const newClient = () => `10.41.${Math.floor(Math.random() * 250)}.${++clients}`;

/** Posts `body` to a dashboard form as a browser on this site would. */
async function post(
  path: string,
  body: string,
  options: { client?: string; headers?: Record<string, string> } = {},
) {
  const res = await fetch(`${gw.url}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "sec-fetch-site": "same-origin",
      "x-forwarded-for": options.client ?? newClient(),
      ...options.headers,
    },
    body,
  });
  const text = await res.text();
  const { document } = parseHTML(text);
  return {
    status: res.status,
    type: res.headers.get("content-type"),
    title: document.querySelector("h1")?.textContent ?? null,
    alert: document.querySelector('[role="alert"]')?.textContent ?? null,
    text,
  };
}

const oversized = new URLSearchParams({ api_key: `tg_live_${"x".repeat(5000)}` }).toString();

describe("dashboard forms that cannot be read", () => {
  it("answers an oversized sign-in form with the sign-in page, 413 and what to do", async () => {
    const answer = await post("/dashboard/sign-in", oversized);
    expect(answer).toMatchObject({
      status: 413,
      type: "text/html; charset=utf-8",
      title: "Sign in to the dashboard",
      alert:
        "The form was too large to read (at most 4 KB and 10 fields): reload the page and send it again.",
    });
    // The page, with its forms, to try again from.
    expect(answer.text).toContain('<form method="post" action="/dashboard/sign-in">');
  });

  it("answers a form of too many fields 413, a form that does not decompress 400, an unsupported character set 415: each on the page", async () => {
    const fields = new URLSearchParams(
      Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`f${i}`, "x"])),
    ).toString();
    expect(await post("/dashboard/sign-in", fields)).toMatchObject({
      status: 413,
      title: "Sign in to the dashboard",
      alert: expect.stringContaining("too large to read"),
    });
    const notGzip = await post("/dashboard/sign-in", "api_key=tg_live_x", {
      headers: { "content-encoding": "gzip" },
    });
    expect(notGzip).toMatchObject({
      status: 400,
      type: "text/html; charset=utf-8",
      alert: "The form could not be read: reload the page and send it again.",
    });
    const koi8 = await post("/dashboard/sign-in", "api_key=tg_live_x", {
      headers: { "content-type": "application/x-www-form-urlencoded; charset=koi8-r" },
    });
    expect(koi8).toMatchObject({
      status: 415,
      type: "text/html; charset=utf-8",
      alert: expect.stringContaining("character set or encoding is not supported"),
    });
  });

  it("answers a sign-in form sent as JSON or plain text 415 on the page, not as a form without a key", async () => {
    const { key } = await fundedAccount(gw.url, 30, "free");
    for (const type of ["application/json", "text/plain"]) {
      const answer = await post("/dashboard/sign-in", JSON.stringify({ api_key: key }), {
        headers: { "content-type": type },
      });
      expect(answer, type).toMatchObject({
        status: 415,
        type: "text/html; charset=utf-8",
        title: "Sign in to the dashboard",
        alert: expect.stringContaining("must be sent as application/x-www-form-urlencoded"),
      });
    }
    // An empty post (no body at all) is still a form without a key.
    const empty = await fetch(`${gw.url}/dashboard/sign-in`, {
      method: "POST",
      redirect: "manual",
      headers: { "sec-fetch-site": "same-origin", "x-forwarded-for": newClient() },
    });
    expect(empty.status).toBe(401);
  });

  it("answers the e-mail and SSO forms oversized with the sign-in page too", async () => {
    const email = await post(
      "/dashboard/sign-in/email",
      new URLSearchParams({ email: `${"a".repeat(5000)}@example.com` }).toString(),
    );
    expect(email).toMatchObject({
      status: 413,
      title: "Sign in to the dashboard",
      alert: expect.stringContaining("too large to read"),
    });
    const sso = await post(
      "/dashboard/sign-in/sso",
      new URLSearchParams({ sso: `${"a".repeat(5000)}.example.com` }).toString(),
    );
    expect(sso).toMatchObject({
      status: 413,
      title: "Sign in to the dashboard",
      alert: expect.stringContaining("too large to read"),
    });
    const link = await post(
      "/dashboard/sign-in/link",
      new URLSearchParams({ token: "t".repeat(5000) }).toString(),
    );
    expect(link).toMatchObject({ status: 413, title: "Sign in to the dashboard" });
  });

  it("counts an unreadable form against the endpoint's limit: past it, 429 on the page, and a good form too", async () => {
    const client = newClient();
    for (let i = 0; i < 3; i++)
      expect((await post("/dashboard/sign-in", oversized, { client })).status).toBe(413);
    const limited = await post("/dashboard/sign-in", oversized, { client });
    expect(limited).toMatchObject({
      status: 429,
      title: "Sign in to the dashboard",
      alert: expect.stringContaining("dashboard sign-in attempts"),
    });
    const { key } = await fundedAccount(gw.url, 30, "free");
    expect(
      (
        await post("/dashboard/sign-in", new URLSearchParams({ api_key: key }).toString(), {
          client,
        })
      ).status,
    ).toBe(429);

    // The e-mail form's own limit and the SSO form's, likewise.
    const other = newClient();
    for (let i = 0; i < 3; i++) {
      expect(
        (
          await post(
            "/dashboard/sign-in/email",
            new URLSearchParams({ email: `${"a".repeat(5000)}@example.com` }).toString(),
            { client: other },
          )
        ).status,
      ).toBe(413);
      expect(
        (
          await post(
            "/dashboard/sign-in/sso",
            new URLSearchParams({ sso: "a".repeat(5000) }).toString(),
            { client: other },
          )
        ).status,
      ).toBe(413);
    }
    const email = await post("/dashboard/sign-in/email", "email=someone%40example.com", {
      client: other,
    });
    expect(email).toMatchObject({ status: 429, alert: expect.stringContaining("sign-in e-mails") });
    const sso = await post("/dashboard/sign-in/sso", "sso=example.com", { client: other });
    expect(sso).toMatchObject({
      status: 429,
      alert: expect.stringContaining("single sign-on attempts"),
    });
  });
});

describe("the sign-out forms", () => {
  it("answers a sign-out from a page of an ended session (its CSRF token stale) with a page saying so, 403, still signed in", async () => {
    const { key } = await fundedAccount(gw.url, 30, "free");
    const signIn = () =>
      fetch(`${gw.url}/dashboard/sign-in`, {
        method: "POST",
        redirect: "manual",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          "sec-fetch-site": "same-origin",
          "x-forwarded-for": newClient(),
        },
        body: new URLSearchParams({ api_key: key }).toString(),
      }).then((res) => (res.headers.get("set-cookie") ?? "").split(";")[0]!);
    // A page rendered in one session; that session is signed out and a new one opened (another tab).
    const first = await signIn();
    const page = await (await fetch(`${gw.url}/dashboard`, { headers: { cookie: first } })).text();
    const staleCsrf = /name="csrf-token" content="([^"]+)"/.exec(page)![1]!;
    const second = await signIn();
    for (const path of ["/dashboard/sign-out", "/dashboard/sign-out-everywhere"]) {
      const answer = await post(path, new URLSearchParams({ _csrf: staleCsrf }).toString(), {
        headers: { cookie: second },
      });
      expect(answer).toMatchObject({
        status: 403,
        type: "text/html; charset=utf-8",
        title: "Not signed out",
        alert: "This request is missing the dashboard's CSRF token: reload the page and try again.",
      });
      expect(answer.text).toContain('<a href="/dashboard">Back to the dashboard</a>');
    }
    const still = await fetch(`${gw.url}/dashboard`, {
      headers: { cookie: second },
      redirect: "manual",
    });
    expect(still.status).toBe(200);
    // An oversized sign-out form: the same page, 413.
    expect(
      await post("/dashboard/sign-out", `_csrf=${"x".repeat(5000)}`, {
        headers: { cookie: second },
      }),
    ).toMatchObject({ status: 413, title: "Not signed out" });
  });
});
