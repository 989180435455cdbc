import { once } from "node:events";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anvilAccount } from "../../chain-fixtures/chain.js";
import { launchChromium, watchPage } from "../helpers/browser.js";
import { injectWallet } from "../helpers/browser-wallet.js";
import { balanceOf, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";
import { startChains } from "../helpers/x402.js";

/**
 * The gateway behind a reverse proxy that serves it under /toolgate and strips the prefix
 * (PUBLIC_BASE_URL `http://127.0.0.1:<proxy>/toolgate`), in Debian's Chromium: a reader clicks
 * through the pages, uses Try it, signs in, uses the dashboard (its script's API calls and live
 * feed) and signs out, signs in with a wallet and buys credits with it (x402 on local anvil
 * chains), and never asks the proxy for anything outside the prefix (which a real site would
 * answer with someone else's page or a 404).
 */
const PREFIX = "/toolgate";
let gw: TestGateway;
let proxy: Server;
let browser: Browser;
let chains: Awaited<ReturnType<typeof startChains>>;
const WALLET = anvilAccount(6);
let site = ""; // the proxy's origin + PREFIX: what the browser sees
/** What the browser asked the proxy for outside the prefix. */
const outside: string[] = [];

/** A reverse proxy to `target` for the paths under PREFIX, with PREFIX stripped; anything else 404s. */
function prefixProxy(target: () => string): Server {
  return createServer((req, res) => {
    const path = req.url ?? "/";
    if (path !== PREFIX && !path.startsWith(`${PREFIX}/`) && !path.startsWith(`${PREFIX}?`)) {
      outside.push(`${req.method} ${path}`);
      res.writeHead(404, { "content-type": "text/plain" }).end("Not this site's");
      return;
    }
    const upstream = new URL(target());
    const forwarded = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: path.slice(PREFIX.length) || "/",
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on("error", () => res.destroy());
    req.pipe(forwarded);
  });
}

beforeAll(async () => {
  proxy = prefixProxy(() => gw.url);
  proxy.listen(0, "127.0.0.1");
  await once(proxy, "listening");
  site = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}${PREFIX}`;
  [chains, browser] = await Promise.all([startChains([WALLET.address]), launchChromium()]);
  gw = await startGateway({ env: { ...chains.env, PUBLIC_BASE_URL: site } });
}, 90_000);
afterAll(async () => {
  await browser?.close();
  proxy?.closeAllConnections();
  proxy?.close();
  await gw?.stop();
  await chains?.stop();
});

describe("behind a proxy that serves the gateway under a path", () => {
  it("keeps every click, form, script and request under the path: pages, Try it, the dashboard, signing in and out", async () => {
    const { key } = await fundedAccount(gw.url, 100, "business");
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const problems = watchPage(page, new URL(site).origin);

    // The public pages, by their links.
    await page.goto(`${site}/docs`, { waitUntil: "networkidle" });
    const siteNav = page.locator('header nav[aria-label="Site"]');
    await siteNav.getByRole("link", { name: "Status" }).click();
    await page.waitForURL(`${site}/status`);
    await siteNav.getByRole("link", { name: "Changelog" }).click();
    await page.waitForURL(`${site}/changelog`);
    await siteNav.getByRole("link", { name: "API reference" }).click();
    await page.waitForURL(`${site}/docs`);

    // Try it: its script loads from under the path and posts to the tool under it.
    await page.fill("#try-key", key);
    await page.locator("#tool-hash details.try-it summary").click();
    await page.locator("#tool-hash form.try button[type=submit]").click();
    await expect(
      page
        .locator("#tool-hash form.try output")
        .filter({ hasText: "200" })
        .textContent({ timeout: 10_000 }),
    ).resolves.toContain("b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9");
    expect(await balanceOf(gw.url, key)).toBe(99);

    // The dashboard: sent to sign in, signed in, its script's own requests, signed out.
    await siteNav.getByRole("link", { name: "Dashboard" }).click();
    await page.waitForURL(`${site}/dashboard/sign-in`);
    await page.getByLabel("API key", { exact: true }).fill(key);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL(`${site}/dashboard`);
    await page.getByRole("link", { name: "Keys" }).click();
    await page.waitForURL(`${site}/dashboard/keys`);
    await page.getByLabel("Name (optional)").fill("behind the proxy");
    await page.getByRole("button", { name: "Create key" }).click();
    await page.locator("#keys-table tr", { hasText: "behind the proxy" }).waitFor();
    await page.getByRole("link", { name: "Overview" }).click();
    await page.waitForURL(`${site}/dashboard`);
    await page.getByRole("button", { name: "Sign out", exact: true }).click();
    await page.waitForURL(`${site}/dashboard/sign-in?notice=signed_out`);

    expect(outside).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  }, 60_000);

  it("signs in with a wallet and buys credits with it under the path", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const problems = watchPage(page, new URL(site).origin);
    await injectWallet(page, WALLET);
    await page.goto(`${site}/dashboard/sign-in`);
    await page.getByRole("button", { name: "Sign in with a wallet", exact: true }).click();
    await page.waitForURL(`${site}/dashboard`);
    await page.getByRole("link", { name: "Plan and credits" }).click();
    await page.waitForURL(`${site}/dashboard/plan`);
    await page.getByRole("button", { name: "Buy 1,000 credits — $2.00" }).click();
    const receipt = page.getByTestId("purchase-receipt");
    await receipt.waitFor({ state: "visible", timeout: 20_000 });
    await expect(receipt.locator('[data-field="credits"]').textContent()).resolves.toBe("1,000");

    expect(outside).toEqual([]);
    // The purchase was asked twice: the first answer is x402's 402 offer (the browser logs it).
    expect(problems.filter((p) => !p.includes("status of 402 (Payment Required)"))).toEqual([]);
    await context.close();
  }, 60_000);
});
