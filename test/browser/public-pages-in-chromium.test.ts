import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { balanceOf, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";

/**
 * The public pages in Debian's Chromium (driven by playwright-core, never a downloaded browser):
 * each renders its content with no console error and no request to another origin.
 */
const CHROMIUM = "/usr/bin/chromium";
const FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];

let gw: TestGateway;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does this)`);
  [gw, browser] = await Promise.all([
    startGateway({ env: { STATUS_CHECK_INTERVAL_MS: "500" } }),
    chromium.launch({ executablePath: CHROMIUM, args: FLAGS }),
  ]);
  // Let one round of status checks land.
  await new Promise((r) => setTimeout(r, 1500));
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await gw?.stop();
});

async function visit(path: string) {
  const page = await browser.newPage();
  const problems: string[] = [];
  const origin = new URL(gw.url).origin;
  page.on("console", (msg) => {
    if (msg.type() === "error") problems.push(`console: ${msg.text()}`);
  });
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  page.on("request", (req) => {
    const url = new URL(req.url());
    if (url.protocol !== "data:" && url.origin !== origin) problems.push(`request to another origin: ${req.url()}`);
  });
  const response = await page.goto(`${gw.url}${path}`, { waitUntil: "networkidle" });
  return { page, problems, response: response! };
}

describe("public pages in Chromium", () => {
  it("/docs renders every group, the tools and working curl, with no console error and nothing from another origin", async () => {
    const { page, problems, response } = await visit("/docs");
    expect(response.status()).toBe(200);
    expect(response.headers()["x-content-type-options"]).toBe("nosniff");
    expect(response.headers()["content-security-policy"]).toContain("frame-ancestors 'none'");
    for (const group of ["Tools", "Payments", "Account", "Keys", "Usage", "Webhooks", "MCP", "Admin", "Operations"]) {
      await expect(page.locator(`h2#tag-${group.toLowerCase()}`).textContent()).resolves.toBe(group);
    }
    await expect(page.locator("#tool-hash").textContent()).resolves.toContain("1 credit ($0.002");
    await expect(page.locator("#tool-hash pre.curl").textContent()).resolves.toContain('-H "x-api-key: $TOOLGATE_API_KEY"');
    await expect(page.locator("#tool-hash").textContent()).resolves.toContain("b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9");
    expect(problems).toEqual([]);
    await page.close();
  });

  it("/docs's Try it form sends a tool's worked example with the key typed on the page and shows the answer", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const { page, problems } = await visit("/docs");
    await page.fill("#try-key", key);
    await page.locator("#tool-hash details.try-it summary").click();
    await page.locator("#tool-hash form.try button[type=submit]").click();
    const output = page.locator("#tool-hash form.try output");
    await expect(output.filter({ hasText: "200" }).textContent({ timeout: 10_000 })).resolves.toContain("b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9");
    expect(await balanceOf(gw.url, key)).toBe(99);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("/status shows each component's state and uptime, with no console error and nothing from another origin", async () => {
    const { page, problems, response } = await visit("/status");
    expect(response.status()).toBe(200);
    await expect(page.locator("h1").textContent()).resolves.toContain("Status");
    await expect(page.locator("tr#rest-api").textContent()).resolves.toContain("Operational");
    await expect(page.locator("tr#worker-pool-general").textContent()).resolves.toMatch(/\d+(\.\d+)?%/);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("/changelog shows the dated releases from CHANGELOG.md, with no console error and nothing from another origin", async () => {
    const { page, problems, response } = await visit("/changelog");
    expect(response.status()).toBe(200);
    await expect(page.locator("h1").textContent()).resolves.toBe("Changelog");
    await expect(page.locator("section h2 time").first().getAttribute("datetime")).resolves.toMatch(/^\d{4}-\d{2}-\d{2}$/);
    await expect(page.locator("link[rel=alternate]").getAttribute("href")).resolves.toBe("/changelog.rss");
    expect(problems).toEqual([]);
    await page.close();
  });
});
