import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  accessibilityProblems,
  contrastRatio,
  launchChromium,
  watchPage,
} from "../helpers/browser.js";
import { balanceOf, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";

/**
 * The public pages in Debian's Chromium (driven by playwright-core, never a downloaded browser):
 * each renders its content with no console error and no request to another origin.
 */

let gw: TestGateway;
let browser: Browser;

beforeAll(async () => {
  [gw, browser] = await Promise.all([
    startGateway({ env: { STATUS_CHECK_INTERVAL_MS: "500" } }),
    launchChromium(),
  ]);
  // Let a round of status checks land for every component (on a loaded machine the first can
  // take longer than any fixed wait).
  for (const started = Date.now(); Date.now() - started < 30_000; ) {
    const report = (await (await fetch(`${gw.url}/status.json`)).json()) as {
      components: { state: string }[];
    };
    if (report.components.every((c) => c.state !== "unknown")) break;
    await new Promise((r) => setTimeout(r, 100));
  }
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await gw?.stop();
});

async function visit(path: string) {
  const page = await browser.newPage();
  const problems = watchPage(page, new URL(gw.url).origin);
  const response = await page.goto(`${gw.url}${path}`, { waitUntil: "networkidle" });
  return { page, problems, response: response! };
}

describe("public pages in Chromium", () => {
  it("/docs renders every group, the tools and working curl, with no console error and nothing from another origin", async () => {
    const { page, problems, response } = await visit("/docs");
    expect(response.status()).toBe(200);
    expect(response.headers()["x-content-type-options"]).toBe("nosniff");
    expect(response.headers()["content-security-policy"]).toContain("frame-ancestors 'none'");
    for (const group of [
      "Tools",
      "Payments",
      "Account",
      "Keys",
      "Usage",
      "Webhooks",
      "MCP",
      "Admin",
      "Operations",
    ]) {
      await expect(page.locator(`h2#tag-${group.toLowerCase()}`).textContent()).resolves.toBe(
        group,
      );
    }
    await expect(page.locator("#tool-hash").textContent()).resolves.toContain("1 credit ($0.002");
    await expect(page.locator("#tool-hash pre.curl").textContent()).resolves.toContain(
      '-H "x-api-key: $TOOLGATE_API_KEY"',
    );
    await expect(page.locator("#tool-hash").textContent()).resolves.toContain(
      "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9",
    );
    // A field's description and its constraints read apart ("Which URLs are refused. (format uri)").
    expect(await page.locator("body").textContent()).not.toMatch(/[.!?];/);
    // Its examples scroll sideways: each takes the keyboard's focus, to be scrolled without a mouse
    // (checked on a tool whose examples are long: the whole page takes axe seconds).
    expect(await accessibilityProblems(page, "#tool-ai-image-describe")).toEqual([]);
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
    await expect(
      output.filter({ hasText: "200" }).textContent({ timeout: 10_000 }),
    ).resolves.toContain("b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9");
    expect(await balanceOf(gw.url, key)).toBe(99);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("/status shows each component's state and uptime, with no console error and nothing from another origin", async () => {
    const { page, problems, response } = await visit("/status");
    expect(response.status()).toBe(200);
    await expect(page.locator("h1").textContent()).resolves.toContain("Status");
    await expect(page.locator("tr#rest-api").textContent()).resolves.toContain("Operational");
    await expect(page.locator("tr#worker-pool-general").textContent()).resolves.toMatch(
      /\d+(\.\d+)?%/,
    );
    // No reload the reader did not ask for (WCAG 2.2.1): refreshing is the reader's choice.
    expect(await accessibilityProblems(page)).toEqual([]);
    await page.getByRole("link", { name: "Refresh every 30 s" }).click();
    await expect(page.locator('meta[http-equiv="refresh"]').getAttribute("content")).resolves.toBe(
      "30",
    );
    await page.getByRole("link", { name: "Stop refreshing" }).click();
    await expect(page.locator('meta[http-equiv="refresh"]').count()).resolves.toBe(0);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("/changelog shows the dated releases from CHANGELOG.md, with no console error and nothing from another origin", async () => {
    const { page, problems, response } = await visit("/changelog");
    expect(response.status()).toBe(200);
    await expect(page.locator("h1").textContent()).resolves.toBe("Changelog");
    await expect(page.locator("section h2 time").first().getAttribute("datetime")).resolves.toMatch(
      /^\d{4}-\d{2}-\d{2}$/,
    );
    await expect(page.locator("link[rel=alternate]").getAttribute("href")).resolves.toBe(
      "/changelog.rss",
    );
    expect(problems).toEqual([]);
    await page.close();
  });

  it("/status, /changelog and /docs reflow at 320 px: nothing scrolls the page sideways (WCAG 1.4.10)", async () => {
    const page = await browser.newPage({ viewport: { width: 320, height: 640 } });
    const problems = watchPage(page, new URL(gw.url).origin);
    const sideways: Record<string, number> = {};
    for (const path of ["/status", "/changelog", "/docs"]) {
      await page.goto(`${gw.url}${path}`);
      sideways[path] = await page.evaluate(
        () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
      );
    }
    expect(sideways).toEqual({ "/status": 0, "/changelog": 0, "/docs": 0 });
    // What still scrolls (a wide table) does so in a region the keyboard can reach.
    await page.goto(`${gw.url}/status`);
    expect(await accessibilityProblems(page)).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("/status's state colours read at 4.5:1 on white, degraded and down included", async () => {
    const { page } = await visit("/status");
    const colours = await page.evaluate(() => {
      const out: Record<string, string> = {};
      for (const state of [
        "operational",
        "degraded",
        "down",
        "major",
        "unknown",
        "not_configured",
      ]) {
        const pill = document.createElement("span");
        pill.className = `pill ${state}`;
        pill.textContent = state;
        document.querySelector("main")!.append(pill);
        out[state] = getComputedStyle(pill).color;
      }
      return { states: out, background: getComputedStyle(document.body).backgroundColor };
    });
    const ratios = Object.entries(colours.states).map(
      ([state, colour]) => [state, contrastRatio(colour, colours.background)] as const,
    );
    for (const [state, ratio] of ratios)
      expect(ratio, `${state}: ${ratio.toFixed(2)}:1`).toBeGreaterThanOrEqual(4.5);
    await page.close();
  });
});
