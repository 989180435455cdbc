import { parseHTML } from "linkedom";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  dashboardSession,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";

/**
 * A gateway behind a reverse proxy that serves it under a path and strips it (PUBLIC_BASE_URL
 * `https://example.com/toolgate`): the routes stay at /, but every address a browser follows from
 * a page — links, scripts, form actions, the Try it forms' endpoints, redirects — must keep the
 * path, or it leaves the gateway's part of the site. Over HTTP against a real gateway on Redis;
 * the browser's side (the scripts' own requests) is in test/browser/base-path-in-chromium.test.ts.
 */
const PUBLIC = "https://example.com/toolgate";
const PREFIX = "/toolgate";
let gw: TestGateway;

beforeAll(async () => {
  gw = await startGateway({ env: { PUBLIC_BASE_URL: PUBLIC } });
}, 60_000);
afterAll(async () => {
  await gw?.stop();
});

/** Every address in the page a browser would follow or load, as written. */
function addresses(html: string): string[] {
  const { document } = parseHTML(html);
  const found: string[] = [];
  for (const [selector, attribute] of [
    ["[href]", "href"],
    ["[src]", "src"],
    ["form[action]", "action"],
    ["[formaction]", "formaction"],
    ["form[data-endpoint]", "data-endpoint"],
  ] as const)
    for (const element of document.querySelectorAll(selector))
      found.push(element.getAttribute(attribute) ?? "");
  return found;
}

/** The addresses of a page (seen by the browser at `PUBLIC + path`) that leave the prefix. */
function outsidePrefix(path: string, html: string): string[] {
  const page = new URL(`${PUBLIC}${path}`);
  return addresses(html).filter((address) => {
    const resolved = new URL(address, page);
    if (resolved.origin !== page.origin) return false; // another site, or data:
    return resolved.pathname !== PREFIX && !resolved.pathname.startsWith(`${PREFIX}/`);
  });
}

async function page(path: string, cookie?: string) {
  const res = await fetch(`${gw.url}${path}`, {
    redirect: "manual",
    headers: { accept: "text/html", ...(cookie ? { cookie } : {}) },
  });
  return { status: res.status, location: res.headers.get("location"), html: await res.text() };
}

const form = (path: string, fields: Record<string, string>, cookie?: string) =>
  fetch(`${gw.url}${path}`, {
    method: "POST",
    redirect: "manual",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "sec-fetch-site": "same-origin",
      "x-forwarded-for": `10.77.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`,
      ...(cookie ? { cookie } : {}),
    },
    body: new URLSearchParams(fields).toString(),
  });

describe("a PUBLIC_BASE_URL with a path", () => {
  it("keeps the path in every link, script and form of the public pages", async () => {
    for (const path of [
      "/docs",
      "/changelog",
      "/status",
      "/status?refresh=auto",
      "/no-such-page",
      // An e-mailed link's page (here: one that does not work).
      "/api/v1/verify-email?token=x",
    ]) {
      const { html } = await page(path);
      expect(addresses(html).length, path).toBeGreaterThan(0);
      expect(outsidePrefix(path, html), path).toEqual([]);
    }
    const docs = await page("/docs");
    expect(docs.html).toContain(`data-endpoint="${PREFIX}/v1/tools/`);
    expect(docs.html).toContain(`<script src="${PREFIX}/docs/try-it.js"`);
  }, 120_000);

  it("keeps the path in every link, script and form of the dashboard's pages, signed in or not", async () => {
    for (const path of [
      "/dashboard/sign-in",
      "/dashboard/sign-in/link?token=x",
      "/dashboard/reclaim?token=x",
      "/dashboard/no-such-page",
    ]) {
      const { html } = await page(path);
      expect(addresses(html).length, path).toBeGreaterThan(0);
      expect(outsidePrefix(path, html), path).toEqual([]);
    }
    const { key } = await fundedAccount(gw.url, 100, "business");
    const cookie = await dashboardSession(gw.url, key);
    for (const path of [
      "/dashboard",
      "/dashboard/keys",
      "/dashboard/webhooks",
      "/dashboard/webhooks/wh_missing",
      "/dashboard/analytics",
      "/dashboard/sso",
      "/dashboard/plan",
      "/dashboard/no-such-page",
    ]) {
      const { status, html } = await page(path, cookie);
      expect([200, 404], path).toContain(status);
      expect(html, path).toContain('nav class="dash-nav"');
      expect(outsidePrefix(path, html), path).toEqual([]);
      // The scripts build their own requests (the dashboard API, the live feed) on this.
      expect(html, path).toContain(`<meta name="base-path" content="${PREFIX}">`);
    }
  }, 120_000);

  it("redirects within the path: to sign in, after signing in and out", async () => {
    expect((await page("/dashboard")).location).toBe(`${PREFIX}/dashboard/sign-in`);
    const { key } = await fundedAccount(gw.url, 100, "business");
    const signedIn = await form("/dashboard/sign-in", { api_key: key });
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.get("location")).toBe(`${PREFIX}/dashboard`);
    // The cookie's path is / (the `__Host-` prefix requires it), which covers the prefix.
    const setCookie = signedIn.headers.get("set-cookie") ?? "";
    expect(setCookie).toContain("Path=/;");
    const cookie = setCookie.split(";")[0]!;
    expect((await page("/dashboard/sign-in", cookie)).location).toBe(`${PREFIX}/dashboard`);

    const overview = parseHTML((await page("/dashboard", cookie)).html).document;
    const csrf = overview.querySelector('meta[name="csrf-token"]')?.getAttribute("content") ?? "";
    const out = await form("/dashboard/sign-out", { _csrf: csrf }, cookie);
    expect(out.status).toBe(303);
    expect(out.headers.get("location")).toBe(`${PREFIX}/dashboard/sign-in?notice=signed_out`);

    const again = await dashboardSession(gw.url, key);
    const everywhere = await form("/dashboard/sign-out-everywhere", { _csrf: "x" }, "");
    expect(everywhere.headers.get("location")).toBe(`${PREFIX}/dashboard/sign-in?notice=expired`);
    const overviewAgain = parseHTML((await page("/dashboard", again)).html).document;
    const csrfAgain =
      overviewAgain.querySelector('meta[name="csrf-token"]')?.getAttribute("content") ?? "";
    const ended = await form("/dashboard/sign-out-everywhere", { _csrf: csrfAgain }, again);
    expect(ended.headers.get("location")).toBe(
      `${PREFIX}/dashboard/sign-in?notice=signed_out_everywhere`,
    );
  }, 60_000);
});
