import type { AddressInfo } from "node:net";
import { HTTPFacilitatorClient, x402ResourceServer } from "@x402/core/server";
import { ExactEvmScheme as ExactEvmClient } from "@x402/evm/exact/client";
import { ExactEvmScheme as ExactEvmServer } from "@x402/evm/exact/server";
import { paymentMiddleware as paymentMiddlewareV2 } from "@x402/express";
import { wrapFetchWithPaymentFromConfig } from "@x402/fetch";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { paymentMiddleware as paymentMiddlewareV1 } from "x402-express";
import { wrapFetchWithPayment as wrapV1 } from "x402-fetch";
import { anvilAccount, randomWallet } from "../../chain-fixtures/chain.js";
import { PERIOD_MS } from "../../src/accounts/tiers.js";
import { tierLimits } from "../../src/store/index.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis.js";
import {
  admin,
  call,
  dropPrefix,
  fundedAccount,
  spawnGatewayPair,
  uniquePrefix,
  type GatewayProcess,
} from "../helpers/gateway.js";
import { REDIS_URL } from "../helpers/redis.js";
import {
  PAY_TO,
  balanceOf,
  signAuthorization,
  startChains,
  v1ClientWallet,
} from "../helpers/x402.js";

/**
 * Toolgate as the facilitator of someone else's express app, protected by the official x402
 * middlewares (v1 `x402-express`, v2 `@x402/express`) and paid by the official clients: two real
 * gateway processes sharing one Redis, a real anvil chain with the project's EIP-3009 token.
 */
const PRICE = 10_000n;
const FEE = 5;
const PAYERS = [1, 2, 3, 4, 5].map(anvilAccount);
/** The app's own address: the facilitator never receives the funds. */
const APP_PAY_TO = randomWallet(77_001).address;
const prefix = uniquePrefix("x402fac");
let chains: Awaited<ReturnType<typeof startChains>>;
let a: GatewayProcess;
let b: GatewayProcess;
let store: RedisStore;
let business: { accountId: string; key: string };
let pro: { accountId: string; key: string };

beforeAll(async () => {
  chains = await startChains(PAYERS.map((p) => p.address));
  const env = { ...chains.env, FACILITATOR_FEE_CREDITS: String(FEE) };
  [a, b] = await spawnGatewayPair(prefix, env);
  store = createRedisStore({
    url: REDIS_URL,
    keyPrefix: prefix,
    tiers: tierLimits(),
    periodMs: PERIOD_MS,
  });
  business = await fundedAccount(a.url, 1000, "business");
  pro = await fundedAccount(a.url, 1000, "pro");
}, 90_000);
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await store?.close();
  await chains?.stop();
  await dropPrefix(prefix);
});

const fees = async (accountId: string) =>
  (await store.ledger(accountId, { limit: 1000 })).items
    .filter((e) => e.reason === "facilitator_settle")
    .map((e) => e.amount);

const requirementV1 = (over: Record<string, unknown> = {}) => ({
  scheme: "exact",
  network: "base-sepolia",
  maxAmountRequired: PRICE.toString(),
  resource: "http://app.example/paid",
  description: "a paid page",
  mimeType: "application/json",
  payTo: APP_PAY_TO,
  maxTimeoutSeconds: 300,
  asset: chains.base.usdc,
  extra: { name: "USDC", version: "2" },
  ...over,
});

async function paymentV1(
  payer = PAYERS[0]!,
  over: Partial<Parameters<typeof signAuthorization>[0]> = {},
) {
  const payload = await signAuthorization({
    account: payer,
    chain: chains.base,
    value: PRICE,
    to: APP_PAY_TO,
    ...over,
  });
  return { x402Version: 1, scheme: "exact", network: "base-sepolia", payload };
}

const facilitate = (
  gw: GatewayProcess,
  op: "verify" | "settle",
  body: unknown,
  key: string | null = business.key,
  bearer = false,
) =>
  call(`${gw.url}/x402/${op}`, {
    body,
    headers: key ? (bearer ? { authorization: `Bearer ${key}` } : { "x-api-key": key }) : {},
  });

async function listen(app: express.Express): Promise<{ url: string; close(): Promise<void> }> {
  const server = app.listen(0, "127.0.0.1");
  await new Promise((r) => server.once("listening", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((r) => server.close(() => r(undefined))),
  };
}

describe("the facilitator API", () => {
  it("verifies twice, settles once: the second settle answers success:false invalid_transaction_state, the fee is charged once", async () => {
    const body = {
      x402Version: 1,
      paymentPayload: await paymentV1(),
      paymentRequirements: requirementV1(),
    };
    const before = await balanceOf(chains.base, APP_PAY_TO);
    const verified = [
      await facilitate(a, "verify", body),
      await facilitate(b, "verify", body, business.key, true),
    ];
    for (const v of verified)
      expect([v.status, v.body]).toEqual([200, { isValid: true, payer: PAYERS[0]!.address }]);
    const first = await facilitate(a, "settle", body);
    expect([first.status, first.body]).toEqual([
      200,
      {
        success: true,
        transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
        network: "base-sepolia",
        payer: PAYERS[0]!.address,
      },
    ]);
    const second = await facilitate(b, "settle", body);
    expect([second.status, second.body.success, second.body.errorReason]).toEqual([
      200,
      false,
      "invalid_transaction_state",
    ]);
    const again = await facilitate(a, "verify", body);
    expect([again.body.isValid, again.body.invalidReason]).toEqual([
      false,
      "invalid_transaction_state",
    ]);
    expect(await balanceOf(chains.base, APP_PAY_TO)).toBe(before + PRICE);
    expect(await fees(business.accountId)).toEqual([-FEE]);
  }, 30_000);

  it("the same payment settled at once on two processes (and v2): one transfer, one success, one fee", async () => {
    const payer = PAYERS[1]!;
    const accepted = {
      scheme: "exact",
      network: "eip155:84532",
      amount: PRICE.toString(),
      asset: chains.base.usdc,
      payTo: APP_PAY_TO,
      maxTimeoutSeconds: 300,
      extra: { name: "USDC", version: "2" },
    };
    const payload = await signAuthorization({
      account: payer,
      chain: chains.base,
      value: PRICE,
      to: APP_PAY_TO,
    });
    const body = {
      x402Version: 2,
      paymentPayload: {
        x402Version: 2,
        accepted,
        payload,
        resource: { url: "http://app.example/v2", description: "", mimeType: "" },
      },
      paymentRequirements: accepted,
    };
    const [before, feesBefore] = [
      await balanceOf(chains.base, APP_PAY_TO),
      (await fees(business.accountId)).length,
    ];
    const results = await Promise.all([a, b, a, b].map((gw) => facilitate(gw, "settle", body)));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(results.filter((r) => r.body.success === true)).toHaveLength(1);
    expect(results.filter((r) => r.body.success === false).map((r) => r.body.errorReason)).toEqual([
      "invalid_transaction_state",
      "invalid_transaction_state",
      "invalid_transaction_state",
    ]);
    expect(await balanceOf(chains.base, APP_PAY_TO)).toBe(before + PRICE);
    expect((await fees(business.accountId)).length).toBe(feesBefore + 1);
  }, 30_000);

  it("refuses without a key (401), with a tier without the feature (403), an invalid payment and another network: nothing moves", async () => {
    const payer = PAYERS[2]!;
    const body = {
      x402Version: 1,
      paymentPayload: await paymentV1(payer),
      paymentRequirements: requirementV1(),
    };
    const payerBefore = await balanceOf(chains.base, payer.address);
    const none = await facilitate(a, "settle", body, null);
    expect([none.status, none.body.error.code]).toEqual([401, "missing_api_key"]);
    const notInTier = await facilitate(a, "settle", body, pro.key);
    expect([notInTier.status, notInTier.body.error.code]).toEqual([403, "feature_not_in_tier"]);
    // A key held to one tool and a budget cannot spend the account's credits on fees instead.
    const limited = await call(`${a.url}/api/v1/keys`, {
      body: { name: "hash only", allowed_tools: ["hash"], budget: { credits: 5, period: "day" } },
      headers: { "x-api-key": business.key },
    });
    expect(limited.status).toBe(201);
    const feesBefore = (await fees(business.accountId)).length;
    for (const op of ["verify", "settle"] as const) {
      const res = await facilitate(a, op, body, limited.body.key);
      expect([op, res.status, res.body.error?.code]).toEqual([
        op,
        403,
        "unrestricted_key_required",
      ]);
    }
    expect(await fees(business.accountId)).toHaveLength(feesBefore);
    // Signed for 1 unit less than the requirement asks.
    const cheap = { ...body, paymentPayload: await paymentV1(payer, { value: PRICE - 1n }) };
    for (const op of ["verify", "settle"] as const) {
      const res = await facilitate(a, op, cheap);
      expect(res.status).toBe(200);
      expect(
        op === "verify"
          ? [res.body.isValid, res.body.invalidReason]
          : [res.body.success, res.body.errorReason],
      ).toEqual([false, "invalid_exact_evm_payload_authorization_value"]);
    }
    const forged = { ...body, paymentPayload: await paymentV1(payer, { signer: PAYERS[3]! }) };
    expect((await facilitate(a, "settle", forged)).body.errorReason).toBe(
      "invalid_exact_evm_payload_signature",
    );
    const otherNetwork = { ...body, paymentRequirements: requirementV1({ network: "base" }) };
    expect((await facilitate(a, "verify", otherNetwork)).body).toMatchObject({
      isValid: false,
      invalidReason: "invalid_network",
    });
    expect((await facilitate(a, "settle", otherNetwork)).body).toMatchObject({
      success: false,
      errorReason: "invalid_network",
    });
    expect(await balanceOf(chains.base, payer.address)).toBe(payerBefore);
  }, 30_000);
});

describe("the facilitator's refusals before any money moves", () => {
  it("settlements sent at once on one balance: as many settle as it covers fees, the others 402 insufficient_credits with nothing moved", async () => {
    // 25 credits: five fees. Seven settlements of distinct payments, all at once, on both processes.
    const caller = await fundedAccount(a.url, 25, "business");
    const bodies = await Promise.all(
      Array.from({ length: 7 }, async (_, i) => ({
        x402Version: 1,
        paymentPayload: await paymentV1(PAYERS[i % PAYERS.length]!),
        paymentRequirements: requirementV1(),
      })),
    );
    const before = await balanceOf(chains.base, APP_PAY_TO);
    const results = await Promise.all(
      bodies.map((body, i) => facilitate(i % 2 ? b : a, "settle", body, caller.key)),
    );
    const settled = results.filter((r) => r.status === 200 && r.body.success === true);
    const refused = results.filter((r) => r.status === 402);
    expect([settled.length, refused.length]).toEqual([5, 2]);
    for (const r of refused) expect(r.body.error.code).toBe("insufficient_credits");
    expect(await balanceOf(chains.base, APP_PAY_TO)).toBe(before + 5n * PRICE);
    expect(await fees(caller.accountId)).toEqual([-FEE, -FEE, -FEE, -FEE, -FEE]);
    expect((await call(`${a.url}/api/v1/account`, { key: caller.key })).body.credits).toBe(0);
    // A refused payment was left unused: settled once the balance covers its fee.
    await admin(a.url, `/accounts/${caller.accountId}/credits`, {
      body: { amount: FEE, reason: "test funds" },
    });
    const retried = await facilitate(
      a,
      "settle",
      bodies[results.indexOf(refused[0]!)]!,
      caller.key,
    );
    expect([retried.status, retried.body.success]).toEqual([200, true]);
    expect(await balanceOf(chains.base, APP_PAY_TO)).toBe(before + 6n * PRICE);
  }, 60_000);

  it("refuses a requirement that pays Toolgate's own address: its payments are credited through its own doors", async () => {
    const payer = PAYERS[3]!;
    const body = {
      x402Version: 1,
      paymentPayload: await paymentV1(payer, { to: PAY_TO }),
      paymentRequirements: requirementV1({ payTo: PAY_TO.toUpperCase().replace("0X", "0x") }),
    };
    const payerBefore = await balanceOf(chains.base, payer.address);
    for (const op of ["verify", "settle"] as const) {
      const res = await facilitate(a, op, body);
      expect([res.status, res.body.isValid ?? res.body.success]).toEqual([200, false]);
      expect(res.body.invalidReason ?? res.body.errorReason).toBe("invalid_payment_requirements");
    }
    expect(await balanceOf(chains.base, payer.address)).toBe(payerBefore);
  }, 30_000);

  it("answers 401 to a caller without a valid key whatever its body, and a fractional or over-long maxTimeoutSeconds as an invalid requirement", async () => {
    for (const key of [null, "tg_live_not_a_key"]) {
      const res = await facilitate(a, "settle", {}, key);
      expect([res.status, res.body.error.code]).toEqual([
        401,
        key ? "invalid_api_key" : "missing_api_key",
      ]);
    }
    // Over six hours: a payment left pending would outlive the record its fee's refund needs.
    for (const maxTimeoutSeconds of [300.5, 6 * 3600 + 1]) {
      const body = {
        x402Version: 1,
        paymentPayload: await paymentV1(PAYERS[4]!),
        paymentRequirements: requirementV1({ maxTimeoutSeconds }),
      };
      for (const op of ["verify", "settle"] as const) {
        const res = await facilitate(a, op, body);
        expect([res.status, res.body.isValid ?? res.body.success]).toEqual([200, false]);
        expect(res.body.invalidReason ?? res.body.errorReason).toBe("invalid_payment_requirements");
        expect(res.body.invalidMessage ?? res.body.errorMessage).toContain("maxTimeoutSeconds");
      }
    }
  }, 30_000);
});

/** The app answers 200; the payer's tokens moved to the app's payTo by the price; Toolgate charged one fee. */
async function expectPaidOnce(payer: `0x${string}`, pay: () => Promise<Response>) {
  const [payerBefore, appBefore, feesBefore] = [
    await balanceOf(chains.base, payer),
    await balanceOf(chains.base, APP_PAY_TO),
    await fees(business.accountId),
  ];
  const res = await pay();
  expect([res.status, await res.json()]).toEqual([200, { paid: true }]);
  expect(await balanceOf(chains.base, payer)).toBe(payerBefore - PRICE);
  expect(await balanceOf(chains.base, APP_PAY_TO)).toBe(appBefore + PRICE);
  expect(await fees(business.accountId)).toEqual([-FEE, ...feesBefore]);
}

describe("official middlewares with Toolgate as their facilitator", () => {
  it("x402-express (v1) paid by x402-fetch: 200, the price moves to the app's payTo, one fee", async () => {
    const payer = PAYERS[3]!;
    const app = express();
    app.use(
      paymentMiddlewareV1(
        APP_PAY_TO,
        {
          "GET /paid": {
            price: {
              amount: PRICE.toString(),
              asset: {
                address: chains.base.usdc,
                decimals: 6,
                eip712: { name: "USDC", version: "2" },
              },
            },
            network: "base-sepolia",
          },
        },
        {
          url: `${a.url}/x402` as `${string}://${string}`,
          createAuthHeaders: async () => ({
            verify: { "x-api-key": business.key },
            settle: { "x-api-key": business.key },
            supported: {},
          }),
        },
      ),
    );
    app.get("/paid", (_req, res) => void res.json({ paid: true }));
    const server = await listen(app);
    try {
      const wallet = v1ClientWallet(chains.base, payer);
      await expectPaidOnce(payer.address, () =>
        wrapV1(fetch, wallet as never)(`${server.url}/paid`),
      );
    } finally {
      await server.close();
    }
  }, 30_000);

  it("@x402/express (v2) paid by @x402/fetch, the key sent as a bearer token: 200, the price moves, one fee", async () => {
    const payer = PAYERS[4]!;
    const facilitator = new HTTPFacilitatorClient({
      url: `${b.url}/x402`,
      createAuthHeaders: async () => ({
        verify: { authorization: `Bearer ${business.key}` },
        settle: { authorization: `Bearer ${business.key}` },
        supported: {},
      }),
    });
    const resourceServer = new x402ResourceServer(facilitator).register(
      "eip155:84532",
      new ExactEvmServer(),
    );
    const app = express();
    app.use(
      paymentMiddlewareV2(
        {
          "GET /paid": {
            accepts: {
              scheme: "exact",
              network: "eip155:84532",
              payTo: APP_PAY_TO,
              price: {
                amount: PRICE.toString(),
                asset: chains.base.usdc,
                extra: { name: "USDC", version: "2" },
              },
            },
          },
        },
        resourceServer,
      ),
    );
    app.get("/paid", (_req, res) => void res.json({ paid: true }));
    const server = await listen(app);
    try {
      const paidFetch = wrapFetchWithPaymentFromConfig(fetch, {
        schemes: [{ network: "eip155:84532", client: new ExactEvmClient(payer) }],
        spendControls: { allowedAssets: [{ network: "eip155:84532", asset: chains.base.usdc }] },
      });
      await expectPaidOnce(payer.address, () => paidFetch(`${server.url}/paid`));
    } finally {
      await server.close();
    }
  }, 30_000);
});
