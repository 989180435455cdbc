import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  accessibilityProblems,
  contrastRatio,
  launchChromium,
  signedInWithKey,
} from "../helpers/browser.js";
import { callTool, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";

/**
 * What a keyboard, screen-reader or phone user meets on the dashboard, checked in Debian's
 * Chromium as they would meet it: dialogs that fit a 320 px screen, focus kept after every action
 * (never dropped to <body>, where the next Tab starts from the top again), a focus ring that can
 * be seen on white, a live feed announced as one summary rather than an entry per call, and
 * messages a person can act on.
 */
let gw: TestGateway;
let browser: Browser;

beforeAll(async () => {
  [gw, browser] = await Promise.all([
    startGateway({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "1", SECRET_KEY: "e".repeat(32) } }),
    launchChromium(),
  ]);
}, 90_000);
afterAll(async () => {
  await browser?.close();
  await gw?.stop();
});

const signedIn = (key: string, viewport = { width: 1280, height: 800 }) =>
  signedInWithKey(browser, gw.url, key, { viewport });

/** The focused element as a short description; "BODY" when focus fell to the document. */
const focused = (page: Page) =>
  page.evaluate(() => {
    const e = document.activeElement;
    if (!e || e === document.body) return "BODY";
    return `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ""} ${(e.textContent ?? "").trim().slice(0, 40)}`;
  });

/** Waits for the page's notice to say something (after an action), and returns it. */
async function noticeAfter(page: Page, action: () => Promise<void>): Promise<string> {
  await page.evaluate(() => {
    document.getElementById("notice")!.textContent = "";
  });
  await action();
  await page.locator("#notice").filter({ hasText: /\S/ }).waitFor({ timeout: 5000 });
  // Let the table refresh that follows a change settle.
  await page.waitForTimeout(300);
  return (await page.locator("#notice").textContent())!;
}

describe("the dashboard's usability in Chromium", () => {
  it("fits the key dialogs and the empty tables' scrolling regions into a 320 px screen", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const { context, page, problems } = await signedIn(key, { width: 320, height: 640 });
    await page.goto(`${gw.url}/dashboard/keys`);
    for (const action of ["edit-limits", "rotate-key", "revoke-key"]) {
      await page.locator(`[data-action=${action}]`).first().click();
      const dialog = page.locator("dialog[open]");
      const box = await dialog.evaluate((d) => {
        const r = d.getBoundingClientRect();
        return { left: r.left, right: r.right, overflow: d.scrollWidth - d.clientWidth };
      });
      expect(box.left, action).toBeGreaterThanOrEqual(0);
      expect(box.right, action).toBeLessThanOrEqual(320);
      expect(box.overflow, action).toBeLessThanOrEqual(0);
      await page.keyboard.press("Escape");
    }
    // A table that scrolls sideways can be reached and scrolled from the keyboard.
    for (const path of ["/dashboard/keys", "/dashboard/webhooks"]) {
      await page.goto(`${gw.url}${path}`);
      const wrap = page.locator(".table-wrap").first();
      await expect(wrap.getAttribute("tabindex")).resolves.toBe("0");
      await expect(wrap.getAttribute("role")).resolves.toBe("region");
      expect(await accessibilityProblems(page)).toEqual([]);
    }
    expect(problems).toEqual([]);
    await context.close();
  });

  it("keeps keyboard focus on the page after each action, opens a destructive dialog on Cancel, and shows a focus ring that can be seen on white", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const { context, page, problems } = await signedIn(key);
    const csrf = await page.locator('meta[name="csrf-token"]').getAttribute("content");
    await page.evaluate(async (token) => {
      const headers = { "content-type": "application/json", "x-csrf-token": token! };
      for (const name of ["focus-a", "focus-b"])
        await fetch("/dashboard/api/v1/keys", {
          method: "POST",
          headers,
          body: JSON.stringify({ name }),
        });
      await fetch("/dashboard/api/v1/webhooks/register", {
        method: "POST",
        headers,
        body: JSON.stringify({ url: "https://127.0.0.1:9/hook", events: ["credits.low"] }),
      });
    }, csrf);

    await page.goto(`${gw.url}/dashboard/keys`);
    // The focus ring, drawn outside the button onto the white page, contrasts with it (3:1).
    await page.locator("#key-name").focus();
    await page.keyboard.press("Tab");
    const ring = await page.evaluate(() => {
      const style = getComputedStyle(document.activeElement!);
      return { color: style.outlineColor, width: style.outlineWidth, style: style.outlineStyle };
    });
    expect(ring.style).not.toBe("none");
    expect(contrastRatio(ring.color, "rgb(255, 255, 255)")).toBeGreaterThanOrEqual(3);

    // A dialog that destroys something opens on its Cancel: an Enter pressed twice keeps the key.
    const openedOn: Record<string, string> = {};
    const steps: [string, () => Promise<void>][] = [
      [
        "create key refused",
        async () => {
          await page.fill("#key-tools", "nosuchtool");
          await page.focus("#create-key button[type=submit]");
          await page.keyboard.press("Enter");
        },
      ],
      [
        "save limits",
        async () => {
          await page.fill("#key-tools", "");
          await page.focus('tr:has(td:text-is("focus-a")) [data-action=edit-limits]');
          await page.keyboard.press("Enter");
          await page.fill("#limits-budget", "10");
          await page.focus("#limits-form button[type=submit]");
          await page.keyboard.press("Enter");
        },
      ],
      [
        "revoke confirmed",
        async () => {
          await page.focus('tr:has(td:text-is("focus-b")) [data-action=revoke-key]');
          await page.keyboard.press("Enter");
          openedOn.revoke = await focused(page);
          await page.keyboard.press("Shift+Tab");
          await page.keyboard.press("Enter");
        },
      ],
    ];
    const where: Record<string, string> = {};
    const run = async (label: string, action: () => Promise<void>) => {
      await noticeAfter(page, action);
      where[label] = await focused(page);
    };
    for (const [label, action] of steps) await run(label, action);

    await page.goto(`${gw.url}/dashboard/webhooks`);
    await run("send test", async () => {
      await page.focus("[data-action=test-webhook]");
      await page.keyboard.press("Enter");
    });
    await run("register refused", async () => {
      await page.fill("#webhook-url", "https://169.254.169.254/x");
      await page.focus("#register-webhook button[type=submit]");
      await page.keyboard.press("Enter");
    });
    await run("delete confirmed", async () => {
      await page.focus("[data-action=delete-webhook]");
      await page.keyboard.press("Enter");
      openedOn.delete = await focused(page);
      await page.keyboard.press("Shift+Tab");
      await page.keyboard.press("Enter");
    });
    await page.goto(`${gw.url}/dashboard`);
    await run("set spend alert", async () => {
      await page.fill("#spend-alert-credits", "30");
      await page.focus("#spend-alert button[type=submit]");
      await page.keyboard.press("Enter");
    });
    await run("remove spend alert", async () => {
      await page.focus("[data-action=remove-spend-alert]");
      await page.keyboard.press("Enter");
    });
    expect(openedOn).toEqual({ revoke: "button Cancel", delete: "button Cancel" });
    // On the button pressed, on its twin in the refreshed table, or on the section's heading.
    expect(where).toEqual({
      "create key refused": "button Create key",
      "save limits": "button Change limits",
      "revoke confirmed": "h2#keys-heading Your keys",
      "send test": "button Send test",
      "register refused": "button Register webhook",
      "delete confirmed": "h2#webhooks-heading Your webhooks",
      "set spend alert": "button Set spend alert",
      "remove spend alert": "h2#spend-heading Spend this month",
    });
    // The two refusals asked for (an unknown tool, a private address), and nothing else.
    expect(problems.filter((p) => !/status of (400|422)/.test(p))).toEqual([]);
    await context.close();
  });

  it("announces a burst of calls as one summary, and reads each feed entry with its parts apart", async () => {
    const { key } = await fundedAccount(gw.url, 200, "pro");
    await callTool(gw.url, key, "hash", { text: "before" });
    const { context, page, problems } = await signedIn(key);
    await page.locator("#live-state", { hasText: "Live:" }).waitFor({ timeout: 5000 });
    const feed = page.getByTestId("usage-feed");
    // The list itself is not live: one polite status region speaks for it.
    await expect(feed.getAttribute("aria-live")).resolves.toBeNull();
    const rendered = (await feed.locator("li").first().textContent())!;
    expect(rendered).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC -1 hash \S/);
    await page.evaluate(() => {
      const said: string[] = [];
      (window as unknown as { said: string[] }).said = said;
      const region = document.getElementById("live-summary")!;
      new MutationObserver(() => {
        if (region.textContent) said.push(region.textContent);
      }).observe(region, { childList: true, characterData: true, subtree: true });
    });
    const N = 30;
    await Promise.all(
      Array.from({ length: N }, (_, i) => callTool(gw.url, key, "hash", { text: `burst ${i}` })),
    );
    await expect
      .poll(() => feed.locator("li").count(), { timeout: 5000 })
      .toBeGreaterThanOrEqual(N + 1);
    await page.waitForTimeout(4500);
    const said = await page.evaluate(() => (window as unknown as { said: string[] }).said);
    expect(said.length).toBeGreaterThanOrEqual(1);
    expect(said.length).toBeLessThanOrEqual(2);
    const total = said.reduce((n, s) => n + Number(/^(\d+) new entr/.exec(s)?.[1] ?? 0), 0);
    expect(total).toBe(N);
    expect(said.at(-1)).toMatch(new RegExp(`balance ${200 - 1 - N} credits`));
    // Entries the script adds read as the server's do.
    expect(await feed.locator("li").first().textContent()).toMatch(
      /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC -1 hash \S/,
    );
    expect(problems).toEqual([]);
    await context.close();
  });

  it("resets Copy for a new secret", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const { context, page, problems } = await signedIn(key);
    await context.grantPermissions(["clipboard-read", "clipboard-write"]);
    await page.goto(`${gw.url}/dashboard/keys`);

    await page.fill("#key-name", "copy-1");
    await page.press("#key-name", "Enter");
    await page.locator("#new-key:not([hidden])").waitFor();
    const first = await page.textContent("#new-key-secret");
    await page.locator("#new-key button[data-copy]").click();
    await expect
      .poll(() => page.textContent("#new-key button[data-copy]"), { timeout: 3000 })
      .toBe("Copied");
    await page.fill("#key-name", "copy-2");
    await page.press("#key-name", "Enter");
    await page.waitForFunction(
      (f) => document.getElementById("new-key-secret")!.textContent !== f,
      first,
    );
    await expect(page.textContent("#new-key button[data-copy]")).resolves.toBe("Copy");
    expect(problems).toEqual([]);
    await context.close();
  });

  it("says what to do about a far-off expiry and a webhook with no events", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const { context, page, problems } = await signedIn(key);
    await page.goto(`${gw.url}/dashboard/keys`);

    // A year past 9999 (the field takes six digits) is refused in words, never "Invalid time value".
    await page.evaluate(() => {
      document.getElementById("notice")!.textContent = "";
    });
    await page.focus("#key-expires");
    await page.keyboard.type("0101");
    await page.keyboard.type("20271");
    await page.keyboard.press("ArrowRight");
    await page.keyboard.type("1000A");
    const expires = page.locator("#key-expires");
    // The field's max keeps the year to four digits; a value past it is refused before it is sent.
    await expect(expires.inputValue()).resolves.toMatch(/^\d{4}-/);
    await expires.evaluate((e: HTMLInputElement) => {
      e.value = "20271-01-01T10:00";
    });
    await page.press("#key-expires", "Enter");
    await page.waitForTimeout(500);
    await expect(page.textContent("#notice")).resolves.not.toContain("Invalid time value");
    const refused = await expires.evaluate(
      (e: HTMLInputElement) =>
        !e.checkValidity() ||
        (document.getElementById("notice")!.textContent ?? "").includes("year 10000"),
    );
    expect(refused).toBe(true);

    await page.goto(`${gw.url}/dashboard/webhooks`);
    await page.fill("#webhook-url", "https://127.0.0.1:9/none");
    for (const box of await page.locator("input[name=events]").all()) await box.uncheck();
    const said = await noticeAfter(page, () => page.press("#webhook-url", "Enter"));
    expect(said).toBe("Choose at least one event.");
    expect(problems).toEqual([]);
    await context.close();
  });
});
