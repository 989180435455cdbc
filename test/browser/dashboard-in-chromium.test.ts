import { createServer, type Server } from "node:http";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomId } from "../../src/lib/ids.js";
import { checkPage, launchChromium, watchPage } from "../helpers/browser.js";
import {
  call,
  callTool,
  fundedAccount,
  signUp,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";
import { startReceiver } from "../helpers/receiver.js";
import { startSmtpServer } from "../helpers/smtp.js";

/**
 * The dashboard in Debian's Chromium (playwright-core, never a downloaded browser), against two
 * real gateways sharing one Redis: pages are served by one, tool calls go to the other, so the
 * live feed is proven to cross processes through Redis. Each page is checked with axe-core
 * (injected into the page) and photographed into artifacts/screenshots/ (git-ignored; CI keeps it).
 */
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let gw: TestGateway;
let other: TestGateway;
let browser: Browser;

beforeAll(async () => {
  [smtp, rx] = await Promise.all([startSmtpServer(), startReceiver()]);
  const env = {
    SMTP_URL: smtp.url,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "1",
    SECRET_KEY: "d".repeat(32),
  };
  gw = await startGateway({ env });
  [other, browser] = await Promise.all([
    startGateway({ prefix: gw.prefix, env }),
    launchChromium(),
  ]);
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await other?.stop();
  await gw?.stop();
  await rx?.stop();
  await smtp?.stop();
});

/** A fresh browser (own cookies) whose console errors, CSP reports and requests elsewhere are collected. */
async function freshPage(
  viewport = { width: 1280, height: 800 },
): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const problems = watchPage(page, new URL(gw.url).origin);
  return { context, page, problems };
}

async function signInWithKey(page: Page, key: string): Promise<void> {
  await page.goto(`${gw.url}/dashboard/sign-in`);
  await page.getByLabel("API key", { exact: true }).fill(key);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.waitForURL(`${gw.url}/dashboard`);
}

/** A secret shown once on the page, once its box is shown (and, after a rotation, once it changed). */
async function shownSecret(page: Page, id: string, previous?: string): Promise<string> {
  const box = page.locator(`#${id}`);
  await box.filter({ hasText: /\S/ }).waitFor({ timeout: 5000 });
  if (previous) await expect.poll(() => box.textContent(), { timeout: 5000 }).not.toBe(previous);
  return (await box.textContent())!;
}

const sessionCookie = async (context: BrowserContext) =>
  (await context.cookies()).find((c) => c.name === "tg_session");
const csrfOf = (page: Page) => page.locator('meta[name="csrf-token"]').getAttribute("content");

/** The sign-in link in the newest mail to `to` (quoted-printable soft breaks undone). */
async function signInLinkFor(to: string): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const mail = smtp.mails
      .filter((m) => m.to.includes(to) && m.raw.includes("sign-in link"))
      .at(-1);
    if (mail) {
      const body = mail.raw.replace(/=\r?\n/g, "").replace(/=3D/g, "=");
      const match = /\/dashboard\/sign-in\/link\?token=[A-Za-z0-9_.-]+/.exec(body);
      if (!match) throw new Error(`no sign-in link in:\n${mail.raw}`);
      return match[0];
    }
    if (Date.now() > deadline) throw new Error(`no sign-in mail to ${to}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("the dashboard in Chromium", () => {
  it("signs in with a key, shows the balance, shows a call made through another gateway process within 2 s without a reload, and signs out for good", async () => {
    const { key } = await fundedAccount(gw.url, 200, "pro");
    const { context, page, problems } = await freshPage();
    await page.goto(`${gw.url}/dashboard`);
    await page.waitForURL(`${gw.url}/dashboard/sign-in`); // not signed in: sent to sign in
    await checkPage(page, "sign-in");
    await signInWithKey(page, key);
    await expect(page.getByTestId("credits-balance").textContent()).resolves.toBe("200");
    await expect(page.getByTestId("tier").textContent()).resolves.toBe("Pro");
    await expect(page.getByTestId("rate-limit").textContent()).resolves.toBe("300 / min");
    await expect(page.getByTestId("period-usage").textContent()).resolves.toBe(
      "0 calls · 0 credits",
    );
    await expect(page.getByTestId("month-spend").textContent()).resolves.toBe("0");
    await page.locator("#live-state", { hasText: "Live:" }).waitFor({ timeout: 5000 });

    const cookie = (await sessionCookie(context))!;
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: "Lax", path: "/" });
    // The session is the dashboard's only: the API and the tools still want x-api-key.
    const withCookie = { cookie: `tg_session=${cookie.value}` };
    expect(
      (await call(`${gw.url}/v1/tools/hash`, { body: { text: "x" }, headers: withCookie })).body
        .error.code,
    ).toBe("missing_api_key");
    expect((await call(`${gw.url}/api/v1/account`, { headers: withCookie })).body.error.code).toBe(
      "missing_api_key",
    );

    const called = await callTool(other.url, key, "hash", { text: "seen live" });
    expect(called.status).toBe(200);
    const calledAt = Date.now();
    await page
      .getByTestId("usage-feed")
      .locator("li", { hasText: "hash" })
      .first()
      .waitFor({ timeout: 2000 });
    const seenAfterMs = Date.now() - calledAt;
    await expect(page.getByTestId("credits-balance").textContent()).resolves.toBe("199");
    await expect(page.getByTestId("period-usage").textContent()).resolves.toBe(
      "1 calls · 1 credits",
    );
    // This month's spend moves with it, as a reload would show it.
    await expect(page.getByTestId("month-spend").textContent()).resolves.toBe("1");
    await expect(
      page.getByTestId("usage-feed").locator("li").first().textContent(),
    ).resolves.toContain("-1");
    console.log(
      `live feed: call through the other gateway shown ${seenAfterMs} ms after its answer`,
    );
    await checkPage(page, "overview");

    await page.getByRole("button", { name: "Sign out", exact: true }).click();
    await page.waitForURL(/\/dashboard\/sign-in\?notice=signed_out$/);
    await expect(page.getByRole("status").textContent()).resolves.toContain("You are signed out.");
    // The old cookie opens nothing any more, on any process.
    for (const url of [gw.url, other.url]) {
      const again = await call(`${url}/dashboard/api/v1/account`, { headers: withCookie });
      expect(again.status).toBe(401);
      expect(again.body.error.code).toBe("session_required");
      const pageAgain = await fetch(`${url}/dashboard`, {
        headers: withCookie,
        redirect: "manual",
      });
      expect(pageAgain.status).toBe(303);
      expect(pageAgain.headers.get("location")).toBe("/dashboard/sign-in");
    }
    expect(problems).toEqual([]);
    await context.close();
  });

  it("lets an account whose every key is revoked sign in by the e-mailed link, create a key, and use it", async () => {
    const email = `recover-${randomId(8)}@example.com`;
    const signup = await call(`${gw.url}/api/v1/signup`, {
      body: { email },
      headers: { "x-forwarded-for": `10.9.${Math.floor(Math.random() * 250)}.1` },
    });
    expect(signup.status).toBe(201);
    const oldKey: string = signup.body.api_key;
    expect(
      (
        await call(`${gw.url}/api/v1/keys/${signup.body.key.id}?force=true`, {
          method: "DELETE",
          key: oldKey,
        })
      ).status,
    ).toBe(200);
    expect((await callTool(gw.url, oldKey, "hash", { text: "x" })).status).toBe(401);

    const { context, page, problems } = await freshPage();
    await page.goto(`${gw.url}/dashboard/sign-in`);
    await page.getByLabel("E-mail address").fill(email);
    await page.getByRole("button", { name: "E-mail me a sign-in link" }).click();
    await expect(page.getByRole("status").textContent()).resolves.toContain(
      "a sign-in link is on its way",
    );
    const link = await signInLinkFor(email);
    await page.goto(`${gw.url}${link}`);
    await checkPage(page, "sign-in-link");
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL(`${gw.url}/dashboard`);
    await expect(page.getByTestId("credits-balance").textContent()).resolves.toBe("25");

    await page.getByRole("link", { name: "Keys" }).click();
    await page.getByLabel("Name (optional)").fill("recovered");
    await page.getByRole("button", { name: "Create key" }).click();
    const secret = await shownSecret(page, "new-key-secret");
    expect(secret).toMatch(/^tg_/);
    await page.locator("#keys-table tr", { hasText: "recovered" }).waitFor();
    expect((await callTool(gw.url, secret, "hash", { text: "back in" })).status).toBe(200);
    await checkPage(page, "keys-after-recovery");

    // The link works once.
    const { context: second, page: again } = await freshPage();
    await again.goto(`${gw.url}${link}`);
    const [answer] = await Promise.all([
      again.waitForResponse((r) => r.request().method() === "POST"),
      again.getByRole("button", { name: "Sign in", exact: true }).click(),
    ]);
    expect(answer.status()).toBe(400);
    await expect(again.getByRole("alert").textContent()).resolves.toContain("does not work");
    expect(await sessionCookie(second)).toBeUndefined();
    expect(problems).toEqual([]);
    await Promise.all([context.close(), second.close()]);
  });

  it("creates, rotates and revokes keys from the Keys page; a revoked key is refused by the API at once, and revoking the key you signed in with signs you out", async () => {
    const { key: first } = await fundedAccount(gw.url, 100, "free");
    const { context, page, problems } = await freshPage();
    await signInWithKey(page, first);
    await page.goto(`${gw.url}/dashboard/keys`);
    await page.getByRole("button", { name: "Create key" }).click();
    const created = await shownSecret(page, "new-key-secret");
    expect((await callTool(gw.url, created, "hash", { text: "a" })).status).toBe(200);
    await page.locator("#keys-table tbody tr").nth(1).waitFor();

    const row = (secret: string) =>
      page.locator("#keys-table tbody tr", {
        has: page.locator("td code", { hasText: new RegExp(`^${secret.slice(-4)}$`) }),
      });
    await row(created).getByRole("button", { name: "Rotate" }).click();
    await page.getByLabel("Grace period").selectOption("0");
    await page.locator("#rotate-dialog").getByRole("button", { name: "Rotate" }).click();
    await page.locator("#notice", { hasText: "rotated" }).waitFor();
    const rotated = await shownSecret(page, "new-key-secret", created);
    expect(rotated).not.toBe(created);
    expect((await callTool(gw.url, created, "hash", { text: "b" })).status).toBe(401);
    expect((await callTool(gw.url, rotated, "hash", { text: "c" })).status).toBe(200);
    await checkPage(page, "keys");

    await row(rotated).getByRole("button", { name: "Revoke" }).click();
    await expect(page.locator("#last-key-warning").isVisible()).resolves.toBe(false);
    await expect(page.locator("#revoke-dialog .session-key-warning").isVisible()).resolves.toBe(
      false,
    );
    await checkPage(page, "keys-revoke-dialog");
    await page.locator("#revoke-dialog").getByRole("button", { name: "Revoke" }).click();
    await page.locator("#notice", { hasText: `${rotated.slice(-4)} is revoked` }).waitFor();
    const refused = await callTool(gw.url, rotated, "hash", { text: "d" });
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe("api_key_revoked");

    // The last active key, and the one this session was opened with: the dialog warns of both.
    await expect(row(first).locator("td").first().textContent()).resolves.toContain(
      "(you signed in with it)",
    );
    await row(first).getByRole("button", { name: "Revoke" }).click();
    await expect(page.locator("#last-key-warning").isVisible()).resolves.toBe(true);
    await expect(page.locator("#revoke-dialog .session-key-warning").isVisible()).resolves.toBe(
      true,
    );
    await page.locator("#revoke-dialog").getByRole("button", { name: "Cancel" }).click();
    expect((await callTool(gw.url, first, "hash", { text: "e" })).status).toBe(200);
    await row(first).getByRole("button", { name: "Revoke" }).click();
    await page.locator("#revoke-dialog").getByRole("button", { name: "Revoke" }).click();
    // Revoked, it ends the session it opened: the sign-in page says why.
    await page.waitForURL(`${gw.url}/dashboard/sign-in?notice=session_key_changed`);
    await page.getByText("What you signed in with no longer opens this session").waitFor();
    expect((await callTool(gw.url, first, "hash", { text: "f" })).status).toBe(401);
    expect(problems).toEqual([]);
    await context.close();
  });

  it("creates a key with an expiry, allowed tools and a budget from the Keys page, lists them, and the API holds the key to them; such a key opens no dashboard session", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const { context, page, problems } = await freshPage();
    await signInWithKey(page, key);
    await page.goto(`${gw.url}/dashboard/keys`);
    // The create form's fields (each key's "Change limits" dialog has fields of the same names).
    const form = page.locator("#create-key");
    // An unknown tool name is refused by the API, and the form says so.
    await form.getByLabel("Allowed tools", { exact: false }).fill("hash, no-such-tool");
    await page.getByRole("button", { name: "Create key" }).click();
    await page.locator("#notice.error", { hasText: "No tool named no-such-tool" }).waitFor();

    // Two days ahead, as the browser's datetime-local field takes it (local time, to the minute).
    const expires = await page.evaluate(() => {
      const at = new Date(Date.now() + 2 * 86_400_000);
      at.setSeconds(0, 0);
      const local = new Date(at.getTime() - at.getTimezoneOffset() * 60_000);
      return { field: local.toISOString().slice(0, 16), iso: at.toISOString() };
    });
    await form.getByLabel("Name (optional)").fill("limited");
    await form.getByLabel("Expires at", { exact: false }).fill(expires.field);
    await form.getByLabel("Allowed tools", { exact: false }).fill("hash, uuid");
    await form.getByLabel("Budget in credits").fill("2");
    await form.getByLabel("Budget period").selectOption("day");
    await checkPage(page, "keys-create-with-limits");
    await page.getByRole("button", { name: "Create key" }).click();
    const secret = await shownSecret(page, "new-key-secret");
    const row = page.locator("#keys-table tbody tr", { hasText: "limited" });
    await row.waitFor();
    await expect(row.locator("td.tools").textContent()).resolves.toBe("hash id-generate");
    await expect(row.locator("td.budget").textContent()).resolves.toBe("0 of 2 credits per day");
    await expect(row.locator("td.expires time").getAttribute("datetime")).resolves.toBe(
      expires.iso,
    );

    const calls = [];
    for (const text of ["a", "b", "c"])
      calls.push((await callTool(gw.url, secret, "hash", { text })).status);
    expect(calls).toEqual([200, 200, 402]);
    const other = await callTool(gw.url, secret, "markdown-to-html", { markdown: "# no" });
    expect([other.status, other.body.error.code]).toEqual([403, "tool_not_allowed"]);
    await page.reload();
    await expect(row.locator("td.budget").textContent()).resolves.toBe("2 of 2 credits per day");
    await checkPage(page, "keys-with-limits");

    // The limited key signs in to nothing: the dashboard manages keys and controls.
    const { context: second, page: signIn } = await freshPage();
    await signIn.goto(`${gw.url}/dashboard/sign-in`);
    await signIn.getByLabel("API key", { exact: true }).fill(secret);
    await signIn.getByRole("button", { name: "Sign in", exact: true }).click();
    await expect(signIn.getByRole("alert").textContent()).resolves.toContain("cannot manage keys");
    expect(await sessionCookie(second)).toBeUndefined();
    // The one failed request: the creation refused for its unknown tool name.
    expect(problems).toEqual([
      "console: Failed to load resource: the server responded with a status of 400 (Bad Request)",
    ]);
    await Promise.all([context.close(), second.close()]);
  });

  it("changes an existing key's budget from the Keys page, the API enforces it at once, and removes it; refusals show in the dialog", async () => {
    const { key: owner } = await fundedAccount(gw.url, 100, "free");
    const created = await call(`${gw.url}/api/v1/keys`, { key: owner, body: { name: "worker" } });
    const worker: string = created.body.key;
    const { context, page, problems } = await freshPage();
    await signInWithKey(page, owner);
    await page.goto(`${gw.url}/dashboard/keys`);
    const row = page.locator("#keys-table tbody tr", { hasText: "worker" });
    const dialog = page.locator("#limits-dialog");

    // From the keyboard: focus the row's button, open the dialog, fill its labelled fields.
    await row.getByRole("button", { name: "Change limits" }).focus();
    await page.keyboard.press("Enter");
    await expect(dialog.isVisible()).resolves.toBe(true);
    await dialog.getByLabel("Allowed tools", { exact: false }).fill("no-such-tool");
    await dialog.getByRole("button", { name: "Save limits" }).click();
    await dialog.locator("#limits-error", { hasText: "No tool named no-such-tool" }).waitFor();
    await dialog.getByLabel("Allowed tools", { exact: false }).fill("");
    await dialog.getByLabel("Budget in credits", { exact: false }).fill("1");
    await dialog.getByLabel("Budget period").selectOption("month");
    await checkPage(page, "keys-change-limits");
    await dialog.getByRole("button", { name: "Save limits" }).press("Enter");
    await page.locator("#notice", { hasText: "limits of key" }).waitFor();
    await expect(dialog.isVisible()).resolves.toBe(false);
    await expect(row.locator("td.budget").textContent()).resolves.toBe("0 of 1 credits per month");

    expect((await callTool(gw.url, worker, "hash", { text: "a" })).status).toBe(200);
    const over = await callTool(gw.url, worker, "hash", { text: "b" });
    expect([over.status, over.body.error.code]).toEqual([402, "key_budget_exceeded"]);
    expect(over.body.error.budget).toMatchObject({ credits: 1, period: "month", spent: 1 });

    // Removed: emptied field, saved; the key calls again with no budget.
    await page.reload();
    await row.getByRole("button", { name: "Change limits" }).click();
    await expect(
      dialog.getByLabel("Budget in credits", { exact: false }).inputValue(),
    ).resolves.toBe("1");
    await dialog.getByRole("button", { name: "Remove all limits" }).click();
    await dialog.getByRole("button", { name: "Save limits" }).click();
    await page.locator("#notice", { hasText: "limits of key" }).waitFor();
    await expect(row.locator("td.budget").textContent()).resolves.toBe("—");
    expect((await callTool(gw.url, worker, "hash", { text: "c" })).status).toBe(200);
    const listed = (await call(`${gw.url}/api/v1/keys`, { key: owner })).body.data.find(
      (k: { name: string }) => k.name === "worker",
    );
    expect(listed).toMatchObject({ budget: null, allowed_tools: null, expires_at: null });
    // The one failed request: the unknown tool name.
    expect(problems).toEqual([
      "console: Failed to load resource: the server responded with a status of 400 (Bad Request)",
    ]);
    await context.close();
  });

  it("sets the spend alert from the overview beside the month's spend, the API reports it, and removes it", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    expect((await callTool(gw.url, key, "hash", { text: "spent" })).status).toBe(200);
    const { context, page, problems } = await freshPage();
    await signInWithKey(page, key);
    await expect(page.getByTestId("month-spend").textContent()).resolves.toBe("1");
    await expect(page.getByTestId("spend-alert").textContent()).resolves.toBe(
      "No spend alert set.",
    );
    await page.getByLabel("Alert when this month's spend reaches (credits)").fill("250");
    await page.getByRole("button", { name: "Set spend alert" }).press("Enter");
    await page.locator("#notice", { hasText: "Spend alert set" }).waitFor();
    await expect(page.getByTestId("spend-alert").textContent()).resolves.toBe("250");
    const account = await call(`${gw.url}/api/v1/account`, { key });
    expect(account.body.spend_alert).toEqual({ credits: 250 });
    expect(account.body.spend.credits).toBe(1);
    await checkPage(page, "overview-spend-alert");

    await page.getByRole("button", { name: "Remove the spend alert" }).click();
    await page.locator("#notice", { hasText: "Spend alert removed" }).waitFor();
    await expect(page.getByTestId("spend-alert").textContent()).resolves.toBe(
      "No spend alert set.",
    );
    expect((await call(`${gw.url}/api/v1/account`, { key })).body.spend_alert).toBeNull();
    expect(problems).toEqual([]);
    await context.close();
  });

  it("shows calls already exported to the books (and trimmed from the store) in the overview's feed and period usage", async () => {
    // A gateway whose books are kept (PGlite), exporting every 100 ms.
    const withBooks = await startGateway({
      store: "memory",
      env: { DATABASE_URL: "pglite://memory", BOOKS_EXPORT_INTERVAL_MS: "100" },
    });
    try {
      const { key, accountId } = await fundedAccount(withBooks.url, 100, "pro");
      for (const text of ["a", "b", "c"])
        expect((await callTool(withBooks.url, key, "hash", { text })).status).toBe(200);
      // Exported and trimmed: the store holds no debit of the account any more.
      for (const deadline = Date.now() + 10_000; ; await new Promise((r) => setTimeout(r, 100))) {
        const held = await withBooks.services.store.ledger(accountId, { limit: 50 });
        if (!held.items.some((e) => e.kind === "debit")) break;
        if (Date.now() > deadline) throw new Error("the export did not trim the store's ledger");
      }
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      await page.goto(`${withBooks.url}/dashboard/sign-in`);
      await page.getByLabel("API key", { exact: true }).fill(key);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      await page.waitForURL(`${withBooks.url}/dashboard`);
      await expect(page.getByTestId("period-usage").textContent()).resolves.toBe(
        "3 calls · 3 credits",
      );
      await expect(
        page.getByTestId("usage-feed").locator("li", { hasText: "hash" }).count(),
      ).resolves.toBe(3);
      await context.close();
    } finally {
      await withBooks.stop();
    }
  });

  it("refuses a cross-site POST and any change without the CSRF token, and answers 404 for another account's key", async () => {
    const mine = await fundedAccount(gw.url, 100, "free");
    const theirs = await signUp(gw.url);
    const { context, page, problems } = await freshPage();
    await signInWithKey(page, mine.key);
    const cookie = `tg_session=${(await sessionCookie(context))!.value}`;
    const keysBefore = (await call(`${gw.url}/api/v1/keys`, { key: mine.key })).body.data.length;

    // A real cross-site form (another origin: localhost rather than 127.0.0.1) posting to the dashboard.
    const attacker: Server = createServer((_req, res) => {
      res.setHeader("content-type", "text/html");
      res.end(
        `<form id="f" method="post" action="${gw.url}/dashboard/sign-out-everywhere"><input name="x" value="1"></form><form id="g" method="post" action="${gw.url}/dashboard/api/v1/keys" enctype="text/plain"><input name='{"name":"evil","x":"' value='"}'></form><form id="h" method="post" action="${gw.url}/dashboard/sign-out"></form>`,
      );
    });
    await new Promise<void>((resolve) => attacker.listen(0, "127.0.0.1", resolve));
    const attackerUrl = `http://localhost:${(attacker.address() as { port: number }).port}/`;
    // h: a sign-out arrives without the cookie (SameSite=Lax); its answer must not clear it either.
    for (const form of ["f", "g", "h"]) {
      // A page each: the first form's redirect is still navigating when the next would start.
      const evil = await context.newPage();
      await evil.goto(attackerUrl);
      const [answer] = await Promise.all([
        evil.waitForResponse((r) => r.url().startsWith(gw.url)),
        evil.evaluate((id) => (document.getElementById(id) as HTMLFormElement).submit(), form),
      ]);
      expect(answer.status()).toBeGreaterThanOrEqual(300); // a redirect to sign in, or a refusal: never the change
      await evil.close();
    }
    attacker.close();
    await page.reload();
    expect(new URL(page.url()).pathname).toBe("/dashboard"); // not sent to sign in
    await expect(page.getByTestId("credits-balance").textContent()).resolves.toBe("100"); // still signed in
    expect((await call(`${gw.url}/api/v1/keys`, { key: mine.key })).body.data.length).toBe(
      keysBefore,
    );

    // The same requests with the session cookie attached but no token (what a forged request could send at best).
    const noToken = await call(`${gw.url}/dashboard/api/v1/keys`, {
      body: {},
      headers: { cookie, "sec-fetch-site": "cross-site" },
    });
    expect(noToken.status).toBe(403);
    expect(noToken.body.error.code).toBe("csrf_failed");
    const wrongToken = await call(`${gw.url}/dashboard/api/v1/keys`, {
      body: {},
      headers: { cookie, "x-csrf-token": "not-the-token" },
    });
    expect(wrongToken.body.error.code).toBe("csrf_failed");
    const everywhere = await fetch(`${gw.url}/dashboard/sign-out-everywhere`, {
      method: "POST",
      headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
      body: "x=1",
      redirect: "manual",
    });
    expect(everywhere.status).toBe(403);
    expect((await call(`${gw.url}/api/v1/keys`, { key: mine.key })).body.data.length).toBe(
      keysBefore,
    );

    // With the token: another account's key is not found, and stays untouched.
    const token = (await csrfOf(page))!;
    const headers = { cookie, "x-csrf-token": token };
    for (const [method, path, body] of [
      ["DELETE", `/keys/${theirs.keyId}?force=true`, undefined],
      ["POST", `/keys/${theirs.keyId}/rotate`, {}],
    ] as const) {
      const res = await call(`${gw.url}/dashboard/api/v1${path}`, { method, body, headers });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe("not_found");
    }
    expect((await callTool(gw.url, theirs.key, "hash", { text: "still mine" })).status).toBe(200);
    const own = await call(`${gw.url}/dashboard/api/v1/keys`, {
      body: { name: "with token" },
      headers,
    });
    expect(own.status).toBe(201);

    // Sign out everywhere ends this session and any other of the account.
    const { context: elsewhere, page: other } = await freshPage({ width: 390, height: 844 });
    await signInWithKey(other, mine.key);
    await checkPage(other, "overview-phone");
    await page.getByRole("button", { name: "Sign out everywhere" }).click();
    await page.waitForURL(/notice=signed_out_everywhere/);
    await other.reload();
    await other.waitForURL(`${gw.url}/dashboard/sign-in`);
    expect(problems).toEqual([]);
    await Promise.all([context.close(), elsewhere.close()]);
  });

  it("registers a webhook, sends it a test and shows the delivery in its log; a Free account is told webhooks are Pro", async () => {
    const pro = await fundedAccount(gw.url, 100, "pro");
    const { context, page, problems } = await freshPage();
    await signInWithKey(page, pro.key);
    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.getByLabel("HTTPS URL").fill(rx.url("/dashboard-hook"));
    await page.getByRole("button", { name: "Register webhook" }).click();
    expect(await shownSecret(page, "new-secret-value")).toMatch(/^whsec_/);
    const row = page.locator("#webhooks-table tbody tr", { hasText: "dashboard-hook" });
    await row.waitFor();
    await checkPage(page, "webhooks");
    await row.getByRole("button", { name: "Send test" }).click();
    await page.locator("#notice", { hasText: "Test event sent" }).waitFor();
    expect(await rx.waitFor("/dashboard-hook", 1)).toHaveLength(1);
    await row.getByRole("link", { name: "Delivery log" }).click();
    const delivered = page.locator("#deliveries-table tbody tr", { hasText: "webhook.test" });
    for (let i = 0; i < 40 && (await delivered.count()) === 0; i++) {
      await new Promise((r) => setTimeout(r, 250));
      await page.reload();
    }
    await expect(delivered.first().textContent()).resolves.toMatch(/200.*delivered/);
    await checkPage(page, "webhook-deliveries");
    await page.goBack();
    await row.getByRole("button", { name: "Delete" }).click();
    await page.locator("#delete-dialog").getByRole("button", { name: "Delete" }).click();
    await page.locator("#notice", { hasText: "Webhook deleted" }).waitFor();
    expect((await call(`${gw.url}/api/v1/webhooks`, { key: pro.key })).body.data).toEqual([]);

    const free = await fundedAccount(gw.url, 30, "free");
    await page.getByRole("button", { name: "Sign out", exact: true }).click();
    await signInWithKey(page, free.key);
    await page.goto(`${gw.url}/dashboard/webhooks`);
    await expect(page.locator("main").textContent()).resolves.toContain("part of the Pro tier");
    expect(problems).toEqual([]);
    await context.close();
  });
});
