import { existsSync } from "node:fs";
import { chromium, type Browser, type Page } from "playwright-core";

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
