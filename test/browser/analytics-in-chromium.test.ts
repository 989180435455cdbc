import { readFileSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { checkPage, launchChromium, signedInWithKey } from "../helpers/browser.js";
import { freshDatabase } from "../helpers/postgres.js";
import {
  call,
  callTool,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";

/**
 * The dashboard's Analytics page in Debian's Chromium (a gateway on Redis, its books in
 * PostgreSQL): a Pro account's calls, made with the API,
 * show on the page as totals, a table and two uPlot charts (the library served by the gateway
 * itself: no request leaves it); the range and grouping are chosen with the keyboard alone; the
 * CSV download is the API's export; axe-core finds nothing serious. A Free account is told the
 * page is a Pro feature. Screenshots go to artifacts/screenshots/ (git-ignored).
 */
let gw: TestGateway;
let browser: Browser;
let pro: { accountId: string; key: string; keyId: string };

beforeAll(async () => {
  [gw, browser] = await Promise.all([
    freshDatabase().then((database) =>
      startGateway({ env: { DATABASE_URL: database, BOOKS_EXPORT_INTERVAL_MS: "100" } }),
    ),
    launchChromium(),
  ]);
  pro = await fundedAccount(gw.url, 200, "pro");
  for (let i = 0; i < 5; i++) await callTool(gw.url, pro.key, "hash", { text: `${i}` });
  for (let i = 0; i < 2; i++)
    await callTool(gw.url, pro.key, "regex-test", { pattern: "(", text: `${i}` });
  // The books have every call, timing included, once the API says so.
  for (const deadline = Date.now() + 20_000; ; await new Promise((r) => setTimeout(r, 100))) {
    const answer = await call(`${gw.url}/api/v1/analytics`, { key: pro.key });
    const { totals } = answer.body;
    if (totals?.calls === 7 && totals.latency_p95_ms !== null) break;
    if (Date.now() > deadline)
      throw new Error(`the calls did not reach the books: ${JSON.stringify(answer.body)}`);
  }
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await gw?.stop();
});

const signedIn = (key: string, viewport = { width: 1280, height: 900 }) =>
  signedInWithKey(browser, gw.url, key, { viewport, acceptDownloads: true });

/** Presses Tab until the element with `id` has the focus (at most 30 times). */
async function tabTo(page: Page, id: string): Promise<void> {
  for (let i = 0; i < 30; i++) {
    await page.keyboard.press("Tab");
    if (await page.evaluate((want) => document.activeElement?.id === want, id)) return;
  }
  throw new Error(`#${id} never took the focus`);
}

it("shows a Pro account's calls, credits, errors and latency as totals, a table and charts, reachable from the navigation", async () => {
  const { context, page, problems } = await signedIn(pro.key);
  await page.getByRole("link", { name: "Analytics" }).click();
  await page.waitForURL(`${gw.url}/dashboard/analytics`);
  const totals = page.getByTestId("analytics-totals");
  expect(await totals.locator('[data-total="calls"]').textContent()).toBe("7");
  expect(await totals.locator('[data-total="credits"]').textContent()).toBe("5");
  expect(await totals.locator('[data-total="errors"]').textContent()).toBe("2");
  expect(await totals.locator('[data-total="latency"]').textContent()).toMatch(
    /^\d+(\.\d)? ms \/ \d+(\.\d)? ms$/,
  );
  // The charts are drawn (two uPlot canvases), from the gateway's own copy of uPlot.
  await page.locator('#analytics-charts[data-drawn="true"]').waitFor();
  expect(await page.locator("#analytics-charts canvas").count()).toBe(2);
  // The table adds up to the totals.
  const calls = await page
    .getByTestId("analytics-table")
    .locator("tbody tr td:nth-child(2)")
    .allTextContents();
  expect(calls.map(Number).reduce((a, b) => a + b, 0)).toBe(7);
  await checkPage(page, "dashboard-analytics");
  expect(problems).toEqual([]);
  await context.close();
});

it("is used with the keyboard alone: split by tool, shown, and downloaded as the API's CSV", async () => {
  const { context, page, problems } = await signedIn(pro.key);
  await page.goto(`${gw.url}/dashboard/analytics`);
  await tabTo(page, "group_by");
  await page.keyboard.press("ArrowDown"); // "Nothing (totals)" → "Tool"
  expect(await page.locator("#group_by").inputValue()).toBe("tool");
  await tabTo(page, "apply");
  await page.keyboard.press("Enter");
  await page.waitForURL(/group_by=tool/);
  const tools = await page
    .getByTestId("analytics-table")
    .locator("tbody tr td:nth-child(2)")
    .allTextContents();
  expect([...new Set(tools)].sort()).toEqual(["hash", "regex-test"]);
  await page.locator('#analytics-charts[data-drawn="true"]').waitFor();
  await checkPage(page, "dashboard-analytics-by-tool");

  await tabTo(page, "analytics-csv-link");
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.keyboard.press("Enter"),
  ]);
  const csv = readFileSync((await download.path())!, "utf8");
  const href = (await page.getByTestId("analytics-csv").getAttribute("href"))!;
  const fromApi = await call(`${gw.url}${href.replace("/dashboard/api/v1", "/api/v1")}`, {
    key: pro.key,
  });
  expect(fromApi.status).toBe(200);
  expect(csv).toBe(fromApi.body);
  expect(csv.split("\r\n")[0]).toBe(
    "bucket,group,calls,credits,errors,latency_p50_ms,latency_p95_ms",
  );
  expect(problems).toEqual([]);
  await context.close();
});

it("fits a phone, and tells a Free account that analytics are a Pro feature", async () => {
  const phone = await signedIn(pro.key, { width: 390, height: 844 });
  await phone.page.goto(`${gw.url}/dashboard/analytics?range=7d`);
  await phone.page.locator('#analytics-charts[data-drawn="true"]').waitFor();
  const overflow = await phone.page.evaluate(
    () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
  );
  expect(overflow).toBeLessThanOrEqual(0);
  await checkPage(phone.page, "dashboard-analytics-phone");
  await phone.context.close();

  const free = await fundedAccount(gw.url, 25, "free");
  const { context, page, problems } = await signedIn(free.key);
  await page.goto(`${gw.url}/dashboard/analytics`);
  expect(await page.getByTestId("analytics-not-in-tier").textContent()).toMatch(
    /included from the Pro tier; this account is on Free/,
  );
  await checkPage(page, "dashboard-analytics-free");
  expect(problems).toEqual([]);
  await context.close();
});
