import type { Browser, BrowserContext, Page } from "playwright-core";
import { createPublicClient, http, type Hex, type LocalAccount } from "viem";
import { createSiweMessage, parseSiweMessage } from "viem/siwe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anvilAccount } from "../../chain-fixtures/chain.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { checkPage, launchChromium, watchPage } from "../helpers/browser.js";
import { injectWallet } from "../helpers/browser-wallet.js";
import { call } from "../helpers/gateway.js";
import {
  PAY_TO,
  balanceOf,
  paidGatewayFixture,
  signAuthorization,
  v1Header,
} from "../helpers/x402.js";

/**
 * The wallet in Debian's Chromium: sign in to the dashboard with Sign-In with Ethereum, and buy
 * a credit pack and a plan on the Plan and credits page with x402 — against a real gateway on
 * Redis with x402 on two anvil chains and the project's EIP-3009 token.
 *
 * The browser wallet is an EIP-1193 provider injected as `window.ethereum` that an anvil key
 * answers from this test process (test/helpers/browser-wallet.ts).
 */
const WALLET = anvilAccount(3);
// The Base chain's RPC goes through a proxy the pending-settlement test can silence.
const setup = paidGatewayFixture({ fund: [WALLET.address], publicUrl: true, proxy: true });
let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
});

async function walletPage(account: LocalAccount) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const problems = watchPage(page, new URL(setup.gw.url).origin);
  const wallet = await injectWallet(page, account);
  return { context, page, problems, wallet };
}

/** Signs in on the sign-in page with the injected wallet; returns the SIWE message and signature the page posted. */
async function signInWithWallet(page: Page): Promise<{ message: string; signature: string }> {
  await page.goto(`${setup.gw.url}/dashboard/sign-in`);
  const posted = page.waitForRequest(
    (req) => req.url().endsWith("/dashboard/sign-in/wallet") && req.method() === "POST",
  );
  await page.getByRole("button", { name: "Sign in with a wallet", exact: true }).click();
  const request = await posted;
  await page.waitForURL(`${setup.gw.url}/dashboard`);
  return JSON.parse(request.postData()!);
}

const sessionCookie = async (context: BrowserContext) =>
  (await context.cookies()).find((c) => c.name === "tg_session")!.value;

describe("the wallet in Chromium", () => {
  it("signs in with the wallet to its own account's overview; the same signed message and another domain's are refused", async () => {
    // The wallet pays for a call with x402 first, as an agent would: that opens its account.
    const paid = await call(`${setup.gw.url}/v1/tools/hash`, {
      body: { text: "paid by the wallet" },
      headers: {
        "x-payment": v1Header(
          "base-sepolia",
          await signAuthorization({ account: WALLET, chain: setup.chains.base, value: 2000n }),
        ),
      },
    });
    expect(paid.status).toBe(200);
    const accountId = walletAccountId(WALLET.address);
    const { services } = setup.gw;

    const { context, page, problems, wallet } = await walletPage(WALLET);
    await page.goto(`${setup.gw.url}/dashboard/sign-in`);
    await checkPage(page, "sign-in-with-wallet");
    const { message, signature } = await signInWithWallet(page);
    expect(wallet.requests.map((r) => r.method)).toEqual([
      "eth_requestAccounts",
      "eth_chainId",
      "personal_sign",
    ]);
    expect(parseSiweMessage(message)).toMatchObject({
      address: WALLET.address,
      domain: new URL(setup.gw.url).host,
      chainId: 84532,
    });

    const account = (await services.store.getAccount(accountId))!;
    await expect(page.getByTestId("credits-balance").textContent()).resolves.toBe(
      String(account.balance),
    );
    // The feed is the wallet account's: its paid call is there.
    await page.getByTestId("usage-feed").locator("li", { hasText: "hash" }).first().waitFor();
    const me = await call(`${setup.gw.url}/dashboard/api/v1/account`, {
      headers: { cookie: `tg_session=${await sessionCookie(context)}` },
    });
    expect(me.body).toMatchObject({ id: accountId, email: null });

    // What the page posted works once: replayed, it is refused.
    const replay = await call(`${setup.gw.url}/dashboard/sign-in/wallet`, {
      body: { message, signature },
    });
    expect([replay.status, replay.body.error.code]).toEqual([400, "invalid_token"]);
    expect(replay.body.error.message).toContain("already used");
    // The same wallet signing a message that names another site is no use here either.
    const fresh = parseSiweMessage(
      (
        await call(`${setup.gw.url}/dashboard/sign-in/wallet/challenge`, {
          body: { address: WALLET.address, chain_id: 84532 },
        })
      ).body.message,
    ) as Parameters<typeof createSiweMessage>[0];
    const phished = createSiweMessage({ ...fresh, domain: "toolgate.example.net" });
    const refused = await call(`${setup.gw.url}/dashboard/sign-in/wallet`, {
      body: { message: phished, signature: await WALLET.signMessage({ message: phished }) },
    });
    expect([refused.status, refused.body.error.code]).toEqual([400, "invalid_token"]);
    expect(refused.body.error.message).toContain("is for toolgate.example.net");

    expect(problems).toEqual([]);
    await context.close();
  });

  it("buys a credit pack and a plan with the injected wallet: the credits arrive, the USDC moved on chain, the receipt shows the transaction", async () => {
    const buyer = anvilAccount(4);
    await setup.chains.base.fund(buyer.address, 50_000_000n); // 50 USDC
    const { context, page, problems, wallet } = await walletPage(buyer);
    await signInWithWallet(page);
    const accountId = walletAccountId(buyer.address);
    await page.getByRole("link", { name: "Plan and credits" }).click();
    await page.waitForURL(`${setup.gw.url}/dashboard/plan`);
    await expect(page.getByTestId("credits-balance").textContent()).resolves.toBe("0");
    await expect(page.getByTestId("tier").textContent()).resolves.toBe("Free");
    await expect(
      page.locator("#tiers-table tr[data-tier=starter]").textContent(),
    ).resolves.toContain("$19.00 / month");
    await checkPage(page, "plan");
    // One landmark per name: the section and its scrolling table are two regions, named apart.
    await expect(page.getByRole("region", { name: "Tiers", exact: true }).count()).resolves.toBe(1);

    const payerBefore = await balanceOf(setup.chains.base, buyer.address);
    const payToBefore = await balanceOf(setup.chains.base, PAY_TO);
    await page.getByRole("button", { name: "Buy 1,000 credits — $2.00" }).click();
    const receipt = page.getByTestId("purchase-receipt");
    await receipt.waitFor({ state: "visible", timeout: 20_000 });
    const tx = (await receipt.locator('[data-field="transaction"]').textContent())!;
    expect(tx).toMatch(/^0x[0-9a-f]{64}$/);
    await expect(receipt.locator('[data-field="credits"]').textContent()).resolves.toBe("1,000");
    await expect(receipt.locator('[data-field="paid"]').textContent()).resolves.toBe("$2.00 USDC");
    await expect(receipt.locator('[data-field="network"]').textContent()).resolves.toBe(
      "Base Sepolia (eip155:84532)",
    );
    await expect(page.getByTestId("credits-balance").textContent()).resolves.toBe("1000");
    expect((await setup.gw.services.store.getAccount(accountId))!.balance).toBe(1000);
    // The USDC moved on chain, in the transaction the receipt names.
    expect(await balanceOf(setup.chains.base, buyer.address)).toBe(payerBefore - 2_000_000n);
    expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(payToBefore + 2_000_000n);
    const chain = createPublicClient({ transport: http(setup.chains.base.rpcUrl) });
    expect((await chain.getTransactionReceipt({ hash: tx as Hex })).status).toBe("success");
    const signed = wallet.requests.find((r) => r.method === "eth_signTypedData_v4")!;
    expect(JSON.parse(signed.params[1] as string)).toMatchObject({
      primaryType: "TransferWithAuthorization",
      domain: { chainId: 84532, verifyingContract: setup.chains.base.usdc },
      message: { from: buyer.address, value: "2000000" },
    });
    await checkPage(page, "plan-receipt");
    await page.setViewportSize({ width: 390, height: 844 }); // a phone
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(
      390,
    );
    await checkPage(page, "plan-phone");
    await page.setViewportSize({ width: 1280, height: 800 });

    await page.getByRole("button", { name: "Upgrade to Starter — $19.00 for 30 days" }).click();
    await expect
      .poll(() => page.getByTestId("tier").textContent(), { timeout: 20_000 })
      .toBe("Starter");
    await expect(page.getByTestId("credits-balance").textContent()).resolves.toBe("11000");
    expect(await balanceOf(setup.chains.base, buyer.address)).toBe(payerBefore - 21_000_000n);
    await page.reload();
    await expect(page.getByTestId("tier").textContent()).resolves.toBe("Starter");
    await page.getByRole("button", { name: "Renew Starter — $19.00 for 30 days" }).waitFor();
    await page.getByRole("link", { name: "Overview" }).click();
    await expect(page.getByTestId("credits-balance").textContent()).resolves.toBe("11000");

    // Each purchase was asked twice: the first answer is x402's 402 offer (the browser logs it).
    const offers = problems.filter((p) => p.includes("status of 402 (Payment Required)"));
    expect(offers).toHaveLength(2);
    expect(problems.filter((p) => !offers.includes(p))).toEqual([]);
    await context.close();
  });

  it("sends the same payment again while its settlement is pending, then shows the receipt: paid once", async () => {
    const buyer = anvilAccount(6);
    await setup.chains.base.fund(buyer.address, 10_000_000n);
    const { context, page, problems, wallet } = await walletPage(buyer);
    await signInWithWallet(page);
    await page.goto(`${setup.gw.url}/dashboard/plan`);
    const payToBefore = await balanceOf(setup.chains.base, PAY_TO);
    const paymentsSent: string[] = [];
    page.on("request", (req) => {
      const payment = req.headers()["payment-signature"];
      if (payment) paymentsSent.push(payment);
    });

    // The RPC dies right after the transfer is sent: the gateway cannot know it landed.
    setup.proxy.silenceAfterNextSend();
    await page.getByRole("button", { name: "Buy 1,000 credits — $2.00" }).click();
    await page
      .locator("#purchase-status", { hasText: "still being confirmed" })
      .waitFor({ timeout: 20_000 });
    setup.proxy.resume();
    const receipt = page.getByTestId("purchase-receipt");
    await receipt.waitFor({ state: "visible", timeout: 60_000 });

    expect(wallet.requests.filter((r) => r.method === "eth_signTypedData_v4")).toHaveLength(1);
    expect(paymentsSent.length).toBeGreaterThan(1);
    expect(new Set(paymentsSent).size).toBe(1); // every retry carried the one signed payment
    expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(payToBefore + 2_000_000n);
    await expect(page.getByTestId("credits-balance").textContent()).resolves.toBe("1000");
    expect(
      (await setup.gw.services.store.getAccount(walletAccountId(buyer.address)))!.balance,
    ).toBe(1000);
    const unexpected = problems.filter(
      (p) => !/status of (402 \(Payment Required\)|503 \(Service Unavailable\))/.test(p),
    );
    expect(unexpected).toEqual([]);
    await context.close();
  }, 90_000);

  it("shows the API's refusal when the account changed since the page was rendered, and offers only what it can buy now", async () => {
    const buyer = anvilAccount(7);
    const { context, page, problems, wallet } = await walletPage(buyer);
    await signInWithWallet(page);
    await page.goto(`${setup.gw.url}/dashboard/plan`);
    const starter = page.getByRole("button", { name: "Upgrade to Starter — $19.00 for 30 days" });
    await starter.waitFor();
    // Meanwhile the operator moves the account to Business: Starter would now lower its tier.
    await setup.gw.services.store.setTier(walletAccountId(buyer.address), "business");
    // From the keyboard: focus stays on the page (never dropped to <body>) through the refusal.
    await starter.focus();
    await page.keyboard.press("Enter");
    await expect(page.getByRole("alert").textContent()).resolves.toBe(
      "The starter plan cannot be bought: the account has the Business tier, higher than the plan's; the plan would lower it.",
    );
    // The offer is brought up to date: no plan button, the reason instead.
    await page.locator("#plans li[data-plan=starter]").waitFor();
    await expect(page.locator("#plans button").count()).resolves.toBe(0);
    // The button went with the old section: its heading has the focus now.
    await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe("plans-heading");
    await expect(page.locator("#plans li[data-plan=starter]").textContent()).resolves.toContain(
      "Your Business tier includes this.",
    );
    // Refused before any offer: the wallet was never asked to sign.
    expect(wallet.requests.map((r) => r.method)).not.toContain("eth_signTypedData_v4");
    expect(problems.filter((p) => !p.includes("status of 409 (Conflict)"))).toEqual([]);
    await checkPage(page, "plan-refused");
    await context.close();
  });

  it("says how else to buy when there is no browser wallet, keeping the keyboard's focus on the button", async () => {
    const { context, page, problems } = await walletPage(anvilAccount(8));
    await signInWithWallet(page);
    await page.goto(`${setup.gw.url}/dashboard/plan`);
    await page.evaluate(() => {
      (window as unknown as { ethereum: unknown }).ethereum = undefined;
    });
    const pack = page.locator("button[data-buy=credits]").first();
    await pack.focus();
    await page.keyboard.press("Enter");
    const said = (await page.getByRole("alert").textContent())!;
    expect(said).toContain("No browser wallet was found");
    expect(said).toContain("buy through the API");
    expect(said).not.toContain("sign in");
    await expect(pack.evaluate((b) => b === document.activeElement)).resolves.toBe(true);
    expect(problems.filter((p) => !p.includes("status of 402"))).toEqual([]);
    await context.close();
  });

  it("says so on the page when the wallet declines to sign, keeping the keyboard's focus on the button", async () => {
    const { context, page } = await walletPage(anvilAccount(5));
    await page.goto(`${setup.gw.url}/dashboard/sign-in`);
    await page.evaluate(() => {
      (window as unknown as { ethereum: unknown }).ethereum = {
        async request({ method }: { method: string }) {
          if (method === "eth_requestAccounts") throw new Error("User rejected the request.");
          return null;
        },
      };
    });
    const button = page.getByRole("button", { name: "Sign in with a wallet", exact: true });
    await button.focus();
    await page.keyboard.press("Enter");
    await expect(page.getByRole("alert").textContent()).resolves.toContain("User rejected");
    await expect(button.evaluate((b) => b === document.activeElement)).resolves.toBe(true);
    expect(page.url()).toBe(`${setup.gw.url}/dashboard/sign-in`);
    await context.close();
  });
});
