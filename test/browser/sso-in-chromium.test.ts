import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkPage, launchChromium } from "../helpers/browser.js";
import { call, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";
import { putSso, startOidcProvider, type TestOidcProvider } from "../helpers/oidc-provider.js";
import { freePort } from "../helpers/ports.js";

/**
 * Single sign-on in Debian's Chromium (playwright-core): a Business account sets SSO up through
 * the API, a member signs in on /dashboard/sign-in through a real OpenID Connect provider
 * (`oidc-provider`, HTTPS with the test CA, which this browser context is told to accept) and
 * lands on the overview; the Single sign-on page changes the settings; an address at another
 * domain is refused on the page; a Free account cannot turn SSO on. The SSO pages are checked
 * with axe-core and photographed into artifacts/screenshots/.
 */
let gw: TestGateway;
let idp: TestOidcProvider;
let browser: Browser;

beforeAll(async () => {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  idp = await startOidcProvider({ redirectUri: `${base}/dashboard/sso/callback` });
  [gw, browser] = await Promise.all([
    startGateway({
      env: {
        PORT: String(port),
        PUBLIC_BASE_URL: base,
        SECRET_KEY: "b".repeat(32),
        SSO_ALLOW_PRIVATE_TARGETS: "1",
      },
    }),
    launchChromium(),
  ]);
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await gw?.stop();
  await idp?.stop();
});

/**
 * A fresh browser whose console errors (CSP refusals among them) and uncaught errors on the
 * gateway's pages are collected — not Chromium's note on each 4xx answer: the tests assert those.
 */
async function freshPage(): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  // The provider's certificate is the test CA's, which Chromium does not know.
  const context = await browser.newContext({ ignoreHTTPSErrors: true });
  // Only the gateway and the provider are reached (the provider's development pages ask for a web font).
  await context.route("**/*", (route) =>
    [new URL(gw.url).origin, idp.issuer].includes(new URL(route.request().url()).origin)
      ? route.continue()
      : route.abort(),
  );
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("console", (msg) => {
    const refusal = msg.text().startsWith("Failed to load resource: the server responded");
    if (msg.type() === "error" && page.url().startsWith(gw.url) && !refusal)
      problems.push(`console: ${msg.text()}`);
  });
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  return { context, page, problems };
}

/** The sign-in page's SSO form, then the provider's login and consent, as `login`. */
async function signInWithSso(page: Page, given: string, login: string): Promise<void> {
  await page.goto(`${gw.url}/dashboard/sign-in`);
  await page.getByLabel("Work e-mail, its domain, or account ID").fill(given);
  await page.getByRole("button", { name: "Sign in with SSO" }).click();
  await page.waitForURL(`${idp.issuer}/**`);
  await page.getByPlaceholder("Enter any login").fill(login);
  await page.getByPlaceholder("and password").fill("any password");
  await page.getByRole("button", { name: "Sign-in" }).click();
  await page.getByRole("button", { name: "Continue" }).click();
}

describe("single sign-on in Chromium", () => {
  it("signs a Business account's member in through the provider onto the overview, and changes the settings on the SSO page", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 300, "business");
    const domain = `acme-${accountId.slice(5)}.example`;
    const setUp = await putSso(gw.url, key, idp.settings([domain]));
    expect(setUp.status).toBe(200);

    const { context, page, problems } = await freshPage();
    await page.goto(`${gw.url}/dashboard/sign-in`);
    await checkPage(page, "sign-in-with-sso");
    await signInWithSso(page, `ana@${domain}`, `ana@${domain}`);
    await page.waitForURL(`${gw.url}/dashboard`);
    await expect(page.getByTestId("credits-balance").textContent()).resolves.toBe("300");
    await expect(page.getByTestId("tier").textContent()).resolves.toBe("Business");
    const cookies = await context.cookies(gw.url);
    expect(cookies.find((c) => c.name === "tg_session")).toMatchObject({
      httpOnly: true,
      sameSite: "Lax",
    });
    expect(cookies.find((c) => c.name === "tg_sso")).toBeUndefined(); // the attempt is over

    await page.getByRole("link", { name: "Single sign-on" }).click();
    await page.waitForURL(`${gw.url}/dashboard/sso`);
    await expect(page.locator("#sso-status").textContent()).resolves.toContain(domain);
    await checkPage(page, "sso-settings");
    await page.getByLabel("E-mail domains (separated by commas)").fill(`${domain}, labs-${domain}`);
    await page.getByRole("button", { name: "Save" }).click();
    await page.locator("#notice", { hasText: "Single sign-on is saved" }).waitFor();
    await expect(page.locator("#sso-status").textContent()).resolves.toContain(`labs-${domain}`);
    const read = await call(`${gw.url}/api/v1/account/sso`, { key });
    expect(read.body).toMatchObject({
      email_domains: [domain, `labs-${domain}`],
      client_secret_set: true, // kept: the field was left empty
    });

    // Turned off, it ends the sessions it opened, this one included: the sign-in page says why.
    await page.getByRole("button", { name: "Turn single sign-on off" }).click();
    const asked = (await page.getByRole("dialog").textContent())!;
    expect(asked).toContain("the sessions opened through it end now");
    expect(asked).toContain("You signed in through it: this session ends too.");
    await page.getByRole("dialog").getByRole("button", { name: "Turn off" }).click();
    await page.waitForURL(`${gw.url}/dashboard/sign-in?notice=session_key_changed`);
    await expect(page.getByRole("status").textContent()).resolves.toContain(
      "single sign-on was turned off",
    );
    expect((await call(`${gw.url}/api/v1/account/sso`, { key })).status).toBe(404);
    expect(problems).toEqual([]);
    await context.close();
  });

  it("refuses, on the sign-in page, a member whose address is at a domain the account does not allow", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100, "business");
    const domain = `corp-${accountId.slice(5)}.example`;
    await putSso(gw.url, key, idp.settings([domain]));
    const { context, page, problems } = await freshPage();
    // The hand-over page, held in place (the provider answers its navigation with 204), is checked too.
    await page.route(`${idp.issuer}/**`, (route) => route.fulfill({ status: 204 }));
    await page.goto(`${gw.url}/dashboard/sign-in`);
    await page.getByLabel("Work e-mail, its domain, or account ID").fill(domain);
    await page.getByRole("button", { name: "Sign in with SSO" }).click();
    await page.getByRole("link", { name: "Continue to sign in" }).waitFor();
    await checkPage(page, "sso-continue");
    await page.unroute(`${idp.issuer}/**`);

    const callback = page.waitForResponse((r) => r.url().includes("/dashboard/sso/callback"));
    await signInWithSso(page, domain, "mallory@elsewhere.example");
    expect((await callback).status()).toBe(401);
    await expect(page.getByRole("alert").textContent()).resolves.toContain(
      `mallory@elsewhere.example may not sign in to this account: single sign-on is open to addresses at ${domain} only.`,
    );
    await checkPage(page, "sso-refused");
    expect((await context.cookies(gw.url)).find((c) => c.name === "tg_session")).toBeUndefined();
    expect(problems).toEqual([]);
    await context.close();
  });

  it("does not let a Free account turn SSO on: the page says it is Business, and the dashboard API answers 403", async () => {
    const { key } = await fundedAccount(gw.url, 50, "free");
    const { context, page, problems } = await freshPage();
    await page.goto(`${gw.url}/dashboard/sign-in`);
    await page.getByLabel("API key", { exact: true }).fill(key);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL(`${gw.url}/dashboard`);
    await page.goto(`${gw.url}/dashboard/sso`);
    await expect(page.locator("main").textContent()).resolves.toContain(
      "It is part of the Business tier; this account is on the Free tier.",
    );
    await expect(page.locator("#sso-settings").count()).resolves.toBe(0);
    await checkPage(page, "sso-not-in-tier");
    const answer = await page.evaluate(async () => {
      const csrf = document.querySelector('meta[name="csrf-token"]')!.getAttribute("content")!;
      const res = await fetch("/dashboard/api/v1/account/sso", {
        method: "PUT",
        headers: { "content-type": "application/json", "x-csrf-token": csrf },
        body: JSON.stringify({
          issuer: "https://login.example.com",
          client_id: "c",
          client_secret: "s",
          email_domains: ["free.example"],
        }),
      });
      return { status: res.status, body: await res.json() };
    });
    expect(answer.status).toBe(403);
    expect(answer.body.error.code).toBe("feature_not_in_tier");
    expect(problems).toEqual([]);
    await context.close();
  });
});
