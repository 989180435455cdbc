import { wrapFetchWithPaymentFromConfig } from "@x402/fetch";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { createWalletClient, defineChain, http, publicActions } from "viem";
import { wrapFetchWithPayment as wrapV1 } from "x402-fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anvilAccount, randomWallet } from "../../chain-fixtures/chain.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { call, eventsOf, startGateway, type TestGateway } from "../helpers/gateway.js";
import { PAY_TO, balanceOf, signAuthorization, startChains, v1Header, v2Header } from "../helpers/x402.js";

/**
 * Paying per call with x402, against real anvil chains standing in for Base and Polygon, the
 * project's EIP-3009 token, and real Redis. The hash tool costs 1 credit = 2,000 atomic units.
 */
const PRICE = 2000n;
const PAYERS = [1, 2, 3, 4, 5].map(anvilAccount);
let chains: Awaited<ReturnType<typeof startChains>>;
let gw: TestGateway;
beforeAll(async () => {
  chains = await startChains(PAYERS.map((p) => p.address));
  gw = await startGateway({ env: chains.env });
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  await chains?.stop();
});

const callHash = (headers: Record<string, string> = {}, text = "paid") => call(`${gw.url}/v1/tools/hash`, { method: "POST", body: { text }, headers });
const decode = (header: string | null) => JSON.parse(Buffer.from(header ?? "", "base64").toString("utf8"));
const ledgerOf = async (accountId: string) => (await gw.services.store.ledger(accountId, { limit: 100 })).items.map((e) => [e.kind, e.amount]);

describe("the 402 challenge", () => {
  it("offers both protocol generations, one requirement per network, at the tool's price", async () => {
    const res = await callHash();
    expect(res.status).toBe(402);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.body).toMatchObject({ x402Version: 1, error: { code: "payment_required", type: "payment_error" } });
    expect(res.body.accepts).toEqual([
      { scheme: "exact", network: "base-sepolia", maxAmountRequired: "2000", resource: expect.stringMatching(/\/v1\/tools\/hash$/), description: expect.any(String), mimeType: "application/json", payTo: PAY_TO, maxTimeoutSeconds: 300, asset: chains.base.usdc, extra: { name: "USDC", version: "2" } },
      { scheme: "exact", network: "polygon-amoy", maxAmountRequired: "2000", resource: expect.any(String), description: expect.any(String), mimeType: "application/json", payTo: PAY_TO, maxTimeoutSeconds: 300, asset: chains.polygon.usdc, extra: { name: "USDC", version: "2" } },
    ]);
    expect(res.body.accepts[0].description).toBe("Hash: one call (1 credit)");
    const v2 = decode(res.headers.get("payment-required"));
    expect(v2).toMatchObject({ x402Version: 2, resource: { url: expect.stringMatching(/\/v1\/tools\/hash$/) } });
    expect(v2.accepts.map((a: { network: string; amount: string }) => [a.network, a.amount])).toEqual([["eip155:84532", "2000"], ["eip155:80002", "2000"]]);
    expect(res.headers.get("access-control-expose-headers")).toContain("payment-required");
  });

  it("lists what is accepted at /x402/supported", async () => {
    const res = await call(`${gw.url}/x402/supported`);
    expect(res.body.kinds.map((k: { x402Version: number; network: string }) => `${k.x402Version}:${k.network}`)).toEqual(["1:base-sepolia", "2:eip155:84532", "1:polygon-amoy", "2:eip155:80002"]);
    expect(res.body.payTo).toBe(PAY_TO);
  });

  it("is not sent for an invalid body: 422 before anything is paid", async () => {
    const res = await call(`${gw.url}/v1/tools/hash`, { method: "POST", body: { text: 5 }, headers: { "x-payment": v1Header("base-sepolia", await signAuthorization({ account: PAYERS[0]!, chain: chains.base, value: PRICE })) } });
    expect([res.status, res.body.error.code]).toEqual([422, "validation_failed"]);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(0n);
  });
});

describe("a keyed caller short of credits", () => {
  it("gets 402 insufficient_credits with the x402 offer, so it can pay per call instead", async () => {
    const { signUp } = await import("../helpers/gateway.js");
    const { key } = await signUp(gw.url);
    for (let i = 0; i < 25; i++) expect((await call(`${gw.url}/v1/tools/hash`, { key, body: { text: String(i) } })).status).toBe(200);
    const res = await call(`${gw.url}/v1/tools/hash`, { key, body: { text: "one more" } });
    expect([res.status, res.body.error.code, res.body.error.credits_remaining]).toEqual([402, "insufficient_credits", 0]);
    expect(res.body.accepts).toHaveLength(2);
    expect(res.headers.get("payment-required")).toBeTruthy();
  });
});

describe("a paid call with an Idempotency-Key", () => {
  it("replays the first answer, says so, and charges the call once (the second payment stays as credits)", async () => {
    const payer = PAYERS[3]!;
    const headers = async () => ({ "x-payment": v1Header("base-sepolia", await signAuthorization({ account: payer, chain: chains.base, value: PRICE })), "idempotency-key": "paid-once" });
    const first = await callHash(await headers(), "idem");
    const again = await callHash(await headers(), "idem");
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(await ledgerOf(walletAccountId(payer.address))).toEqual([["purchase", 1], ["debit", -1], ["purchase", 1], ["grant", 0]]);
  }, 30_000);
});

describe("official clients", () => {
  it("x402-fetch (v1) pays on the Base chain: the tool answers and exactly the price moves", async () => {
    const payer = PAYERS[1]!;
    const chain = defineChain({ id: 84532, name: "base-sepolia", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [chains.base.rpcUrl] } } });
    const wallet = createWalletClient({ account: payer, chain, transport: http(chains.base.rpcUrl) }).extend(publicActions);
    const [payerBefore, payToBefore] = [await balanceOf(chains.base, payer.address), await balanceOf(chains.base, PAY_TO)];
    const paidFetch = wrapV1(fetch, wallet as never);
    const res = await paidFetch(`${gw.url}/v1/tools/hash`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ text: "hello world" }) });
    expect(res.status).toBe(200);
    expect((await res.json()).digest).toBe("b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9");
    const receipt = decode(res.headers.get("x-payment-response"));
    expect(receipt).toMatchObject({ success: true, network: "base-sepolia", payer: payer.address, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(res.headers.get("payment-response")).toBe(res.headers.get("x-payment-response"));
    expect(await balanceOf(chains.base, payer.address)).toBe(payerBefore - PRICE);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(payToBefore + PRICE);

    const accountId = walletAccountId(payer.address);
    expect(await ledgerOf(accountId)).toEqual([["debit", -1], ["purchase", 1], ["grant", 0]]);
    const received = (await eventsOf(gw.services.store, accountId, 2)).find((e) => e.event === "payment.received");
    expect(received?.data).toMatchObject({ type: "one_time", credits_added: 1, amount_usd: "0.002", amount_usdc_atomic: "2000", plan: null, agent_id: accountId, network: "base-sepolia", transaction: receipt.transaction });
  }, 30_000);

  it("@x402/fetch (v2) pays on the Polygon chain", async () => {
    const payer = PAYERS[2]!;
    // The client pays on Polygon only, and opts in to our test token (it is not the canonical USDC address).
    const paidFetch = wrapFetchWithPaymentFromConfig(fetch, {
      schemes: [{ network: "eip155:80002", client: new ExactEvmScheme(payer) }],
      spendControls: { allowedAssets: [{ network: "eip155:80002", asset: chains.polygon.usdc }] },
    });
    const payToBefore = await balanceOf(chains.polygon, PAY_TO);
    const res = await paidFetch(`${gw.url}/v1/tools/hash`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ text: "v2" }) });
    expect(res.status).toBe(200);
    expect(decode(res.headers.get("payment-response"))).toMatchObject({ success: true, network: "eip155:80002", payer: payer.address });
    expect(await balanceOf(chains.polygon, PAY_TO)).toBe(payToBefore + PRICE);
    expect(await ledgerOf(walletAccountId(payer.address))).toEqual([["debit", -1], ["purchase", 1], ["grant", 0]]);
  }, 30_000);
});
