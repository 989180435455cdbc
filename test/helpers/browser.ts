import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { chromium, type Browser, type BrowserContextOptions, type Page } from "playwright-core";
import { expect } from "vitest";

/**
 * Debian's Chromium driven by playwright-core (never a downloaded browser), with the flags a
 * headless CI container needs, and what the browser tests watch on every page.
 */
export const CHROMIUM = "/usr/bin/chromium";
const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

export function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does this)`);
  }
  return chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
}

/**
 * A new browser context signed in to the dashboard at `baseUrl` with `key` on the sign-in form,
 * on the Overview, with the page's problems watched (`watchPage`).
 */
export async function signedInWithKey(
  browser: Browser,
  baseUrl: string,
  key: string,
  options: BrowserContextOptions = {},
) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...options });
  const page = await context.newPage();
  const problems = watchPage(page, new URL(baseUrl).origin);
  await page.goto(`${baseUrl}/dashboard/sign-in`);
  await page.getByLabel("API key", { exact: true }).fill(key);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.waitForURL(`${baseUrl}/dashboard`);
  return { context, page, problems };
}

/** Collects the page's console errors (CSP refusals among them), uncaught errors, and requests to any origin but `origin`. */
export function watchPage(page: Page, origin: string): string[] {
  const problems: string[] = [];
  page.on("console", (msg) => {
    if (msg.type() === "error") problems.push(`console: ${msg.text()}`);
  });
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  page.on("request", (req) => {
    const url = new URL(req.url());
    if (url.protocol !== "data:" && url.origin !== origin)
      problems.push(`request to another origin: ${req.url()}`);
  });
  return problems;
}

/** Where the browser tests photograph each page (git-ignored; CI keeps it as an artefact). */
export const SCREENSHOTS = new URL("../../artifacts/screenshots/", import.meta.url).pathname;
const AXE_SOURCE = readFileSync(
  createRequire(import.meta.url).resolve("axe-core/axe.min.js"),
  "utf8",
);

/**
 * axe-core's serious and critical violations on the page as it is now (evaluated through the
 * debugger, as CSP allows no injected script); `within`, a selector, checks only that part of a
 * page too large to check whole in a test's time (/docs takes axe seconds).
 */
export async function accessibilityProblems(page: Page, within?: string): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async (context) => {
    const axe = (
      globalThis as unknown as {
        axe: {
          run(context?: string): Promise<{
            violations: {
              id: string;
              impact: string;
              help: string;
              nodes: { target: string[] }[];
            }[];
          }>;
        };
      }
    ).axe;
    return (await (context ? axe.run(context) : axe.run())).violations;
  }, within);
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map(
      (v) =>
        `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`,
    );
}

/** No serious or critical accessibility violation on the page, then its screenshot as `name`.png. */
export async function checkPage(page: Page, name: string): Promise<void> {
  expect(await accessibilityProblems(page)).toEqual([]);
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: `${SCREENSHOTS}${name}.png`, fullPage: true });
}

/** WCAG 2 contrast ratio of two colours as computed styles give them (`rgb(…)` or `rgba(…)`, alpha ignored). */
export function contrastRatio(a: string, b: string): number {
  const luminance = (colour: string) => {
    const [r = 0, g = 0, bl = 0] = (colour.match(/[\d.]+/g) ?? []).slice(0, 3).map(Number);
    const linear = (v: number) => {
      const s = v / 255;
      return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    };
    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(bl);
  };
  const [high, low] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (high + 0.05) / (low + 0.05);
}
