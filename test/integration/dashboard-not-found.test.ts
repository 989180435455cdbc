import { parseHTML } from "linkedom";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  dashboardSession,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";

/**
 * A dashboard page for something the account has not — another account's webhook, one deleted —
 * over HTTP against a real gateway on Redis: a 404 page in the dashboard's frame (navigation, the
 * reason, the way back), showing nothing of the other account's.
 */
let gw: TestGateway;

beforeAll(async () => {
  gw = await startGateway({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "1" } });
}, 60_000);
afterAll(async () => {
  await gw?.stop();
});

const signedIn = (key: string) => dashboardSession(gw.url, key);

describe("a dashboard page the account has not", () => {
  it("answers another account's webhook log with the dashboard's 404 page and the way back", async () => {
    const theirs = await fundedAccount(gw.url, 30, "pro");
    const secretUrl = "https://127.0.0.1:9/their-private-hook";
    const hook = await call(`${gw.url}/api/v1/webhooks/register`, {
      key: theirs.key,
      body: { url: secretUrl, events: ["tool.error"] },
    });
    expect(hook.status).toBe(201);
    const mine = await fundedAccount(gw.url, 30, "pro");
    const cookie = await signedIn(mine.key);

    const res = await fetch(`${gw.url}/dashboard/webhooks/${hook.body.id}`, {
      headers: { cookie },
    });
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const html = await res.text();
    expect(html).not.toContain(secretUrl);
    const { document } = parseHTML(html);
    expect(document.querySelector("h1")?.textContent).toBe("Not found");
    expect(document.querySelector('[role="alert"]')?.textContent).toBe(
      "This account has no such webhook (or webhooks are not in its tier): it may have been deleted.",
    );
    expect(document.querySelector('main a[href="/dashboard/webhooks"]')?.textContent).toBe(
      "All webhooks",
    );
    // Still signed in, with the dashboard's navigation to go on from.
    expect(document.querySelector('nav[aria-label="Dashboard"]')).not.toBeNull();
  });

  it("answers a mistyped dashboard address with a 404 page, signed in or not, where it was the API's JSON", async () => {
    const { key } = await fundedAccount(gw.url, 30, "pro");
    const cookie = await signedIn(key);
    for (const headers of [{ cookie }, {} as Record<string, string>]) {
      const res = await fetch(`${gw.url}/dashboard/setings`, { headers });
      expect(res.status).toBe(404);
      expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(res.headers.get("cache-control")).toBe("no-store");
      const { document } = parseHTML(await res.text());
      expect(document.querySelector("h1")?.textContent).toBe("Not found");
      expect(document.querySelector('[role="alert"]')?.textContent).toBe(
        "The dashboard has no such page.",
      );
      // Signed in: the dashboard's navigation; not: the way to sign in.
      if (headers.cookie)
        expect(document.querySelector('nav[aria-label="Dashboard"]')).not.toBeNull();
      else expect(document.querySelector('main a[href="/dashboard/sign-in"]')).not.toBeNull();
    }
    // The dashboard's API keeps its JSON 404, and a page's other methods their 405.
    const api = await fetch(`${gw.url}/dashboard/api/v1/nope`, { headers: { cookie } });
    expect([api.status, api.headers.get("content-type")]).toEqual([
      404,
      "application/json; charset=utf-8",
    ]);
    expect((await fetch(`${gw.url}/dashboard/sign-out`, { headers: { cookie } })).status).toBe(405);
  });

  it("tells a browser with JavaScript off that the page's buttons and forms need it (they did nothing, or put the form in the address)", async () => {
    const { key } = await fundedAccount(gw.url, 30, "pro");
    const cookie = await signedIn(key);
    for (const path of ["/dashboard", "/dashboard/keys", "/dashboard/webhooks"]) {
      const { document } = parseHTML(
        await (await fetch(`${gw.url}${path}`, { headers: { cookie } })).text(),
      );
      expect(document.querySelector("main noscript")?.textContent, path).toBe(
        "This page's buttons and forms need JavaScript, which is off in this browser; what the page shows needs none.",
      );
    }
  });
});
