/**
 * `npm run screenshots`: the README's pictures of the dashboard (docs/screenshots/*.png). Starts a
 * real gateway in this process the way the tests do (test/helpers/gateway.ts: real tool workers,
 * the embedded store with its books in PGlite, so no Redis or PostgreSQL is needed), signs up a Pro
 * account, makes a few calls so the pages have something to show, signs in with its key in
 * Debian's Chromium (/usr/bin/chromium) and photographs each page at laptop size (1280×800, the
 * viewport only, which keeps each file small). Documentation, not a build output: re-run it when a
 * page changes and commit the result.
 */
import { mkdirSync } from "node:fs";
import { launchChromium } from "../test/helpers/browser.js";
import { call, callTool, fundedAccount, startGateway } from "../test/helpers/gateway.js";

const OUT = new URL("../docs/screenshots/", import.meta.url).pathname;
const VIEWPORT = { width: 1280, height: 800 };

const gw = await startGateway({
  store: "memory",
  env: { DATABASE_URL: "pglite://memory", BOOKS_EXPORT_INTERVAL_MS: "100" },
});
const browser = await launchChromium();
try {
  const { key } = await fundedAccount(gw.url, 5000, "pro");
  await call(`${gw.url}/api/v1/keys`, {
    key,
    body: {
      name: "ci",
      allowed_tools: ["hash", "qr-code"],
      budget: { credits: 500, period: "day" },
    },
  });
  await call(`${gw.url}/api/v1/account/spend-alert`, {
    method: "PUT",
    key,
    body: { credits: 20000 },
  });
  for (let i = 0; i < 12; i++) await callTool(gw.url, key, "hash", { text: `call ${i}` });
  for (let i = 0; i < 4; i++)
    await callTool(gw.url, key, "markdown-to-html", { markdown: `# Call ${i}` });
  await callTool(gw.url, key, "regex-test", { pattern: "(", text: "an error" });
  // The analytics page reads the books: wait until the export has every call.
  for (const deadline = Date.now() + 20_000; ; await new Promise((r) => setTimeout(r, 100))) {
    const { body } = await call(`${gw.url}/api/v1/analytics`, { key });
    if (body.totals?.calls === 17) break;
    if (Date.now() > deadline) throw new Error(`calls not in the books: ${JSON.stringify(body)}`);
  }

  mkdirSync(OUT, { recursive: true });
  const page = await (await browser.newContext({ viewport: VIEWPORT })).newPage();
  const shoot = (name: string) => page.screenshot({ path: `${OUT}${name}.png` });
  await page.goto(`${gw.url}/dashboard/sign-in`);
  await shoot("sign-in");
  await page.getByLabel("API key", { exact: true }).fill(key);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.waitForURL(`${gw.url}/dashboard`);
  await page.locator("#live-state", { hasText: "Live:" }).waitFor({ timeout: 5000 });
  await shoot("overview");
  await page.goto(`${gw.url}/dashboard/keys`);
  await page.locator("#keys-heading").scrollIntoViewIfNeeded();
  await shoot("keys");
  await page.goto(`${gw.url}/dashboard/analytics`);
  await page.locator("canvas").first().waitFor({ timeout: 5000 });
  await shoot("analytics");
  await page.goto(`${gw.url}/dashboard/plan`);
  await shoot("plan");
  console.log(`screenshots written to ${OUT}`);
} finally {
  await browser.close();
  await gw.stop();
}
