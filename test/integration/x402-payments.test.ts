import { request as httpRequest } from "node:http";
import { validateDiscoveryExtension } from "@x402/extensions/bazaar";
import { wrapFetchWithPaymentFromConfig } from "@x402/fetch";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { createPublicClient, http, type LocalAccount } from "viem";
import { wrapFetchWithPayment as wrapV1 } from "x402-fetch";
import { describe, expect, it } from "vitest";
import { anvilAccount } from "../../chain-fixtures/chain.js";
import { toolOfferExtensions } from "../../src/payments/discovery.js";
import { PAYMENT_REQUIRED_BUDGET, offerFor, paymentChallenge } from "../../src/payments/offer.js";
import { TOOLS } from "../../src/tools/catalogue/index.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { call, eventsOf } from "../helpers/gateway.js";
import {
  PAY_TO,
  authorizationUsed,
  balanceOf,
  fundedWallet,
  paidGatewayFixture,
  signAuthorization,
  v1Header,
  v2Header,
  v1ClientWallet,
} from "../helpers/x402.js";

/**
 * Paying per call with x402, against real anvil chains standing in for Base and Polygon, the
 * project's EIP-3009 token, and real Redis. The hash tool costs 1 credit = 2,000 atomic units.
 */
const PRICE = 2000n;
const PAYERS = [1, 2, 3, 4, 5].map(anvilAccount);
const setup = paidGatewayFixture({ fund: PAYERS.map((p) => p.address) });

const callHash = (headers: Record<string, string> = {}, text = "paid") =>
  call(`${setup.gw.url}/v1/tools/hash`, { method: "POST", body: { text }, headers });
const decode = (header: string | null) =>
  JSON.parse(Buffer.from(header ?? "", "base64").toString("utf8"));
const ledgerOf = async (accountId: string) =>
  (await setup.gw.services.store.ledger(accountId, { limit: 100 })).items.map((e) => [
    e.kind,
    e.amount,
  ]);

describe("the 402 challenge", () => {
  it("offers both protocol generations, one requirement per network, at the tool's price", async () => {
    const res = await callHash();
    expect(res.status).toBe(402);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.body).toMatchObject({
      x402Version: 1,
      error: { code: "payment_required", type: "payment_error" },
    });
    expect(res.body.accepts).toEqual([
      {
        scheme: "exact",
        network: "base-sepolia",
        maxAmountRequired: "2000",
        resource: expect.stringMatching(/\/v1\/tools\/hash$/),
        description: expect.any(String),
        mimeType: "application/json",
        payTo: PAY_TO,
        maxTimeoutSeconds: 300,
        asset: setup.chains.base.usdc,
        extra: { name: "USDC", version: "2" },
      },
      {
        scheme: "exact",
        network: "polygon-amoy",
        maxAmountRequired: "2000",
        resource: expect.any(String),
        description: expect.any(String),
        mimeType: "application/json",
        payTo: PAY_TO,
        maxTimeoutSeconds: 300,
        asset: setup.chains.polygon.usdc,
        extra: { name: "USDC", version: "2" },
      },
    ]);
    expect(res.body.accepts[0].description).toBe("Hash: one call (1 credit)");
    const v2 = decode(res.headers.get("payment-required"));
    expect(v2).toMatchObject({
      x402Version: 2,
      resource: { url: expect.stringMatching(/\/v1\/tools\/hash$/) },
    });
    expect(
      v2.accepts.map((a: { network: string; amount: string }) => [a.network, a.amount]),
    ).toEqual([
      ["eip155:84532", "2000"],
      ["eip155:80002", "2000"],
    ]);
    expect(res.headers.get("access-control-expose-headers")).toContain("payment-required");
  });

  it("lists what is accepted at /x402/supported", async () => {
    const res = await call(`${setup.gw.url}/x402/supported`);
    expect(
      res.body.kinds.map(
        (k: { x402Version: number; network: string }) => `${k.x402Version}:${k.network}`,
      ),
    ).toEqual(["1:base-sepolia", "2:eip155:84532", "1:polygon-amoy", "2:eip155:80002"]);
    expect(res.body.payTo).toBe(PAY_TO);
  });

  it("is not sent for an invalid body: 422 before anything is paid, or offered", async () => {
    // Unpaid: the caller is told what is wrong, not invited to sign for a call that cannot run.
    const unpaid = await callHash({}, 5 as unknown as string);
    expect([unpaid.status, unpaid.body.error.code, unpaid.headers.get("payment-required")]).toEqual(
      [422, "validation_failed", null],
    );
    const res = await call(`${setup.gw.url}/v1/tools/hash`, {
      method: "POST",
      body: { text: 5 },
      headers: {
        "x-payment": v1Header(
          "base-sepolia",
          await signAuthorization({ account: PAYERS[0]!, chain: setup.chains.base, value: PRICE }),
        ),
      },
    });
    expect([res.status, res.body.error.code]).toEqual([422, "validation_failed"]);
    expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(0n);
  });
});

describe("a keyed caller short of credits", () => {
  it("gets 402 insufficient_credits with the x402 offer, so it can pay per call instead", async () => {
    const { signUp } = await import("../helpers/gateway.js");
    const { key } = await signUp(setup.gw.url);
    for (let i = 0; i < 25; i++)
      expect(
        (await call(`${setup.gw.url}/v1/tools/hash`, { key, body: { text: String(i) } })).status,
      ).toBe(200);
    const res = await call(`${setup.gw.url}/v1/tools/hash`, { key, body: { text: "one more" } });
    expect([res.status, res.body.error.code, res.body.error.credits_remaining]).toEqual([
      402,
      "insufficient_credits",
      0,
    ]);
    expect(res.body.accepts).toHaveLength(2);
    expect(res.headers.get("payment-required")).toBeTruthy();
  });
});

describe("a paid call with an Idempotency-Key", () => {
  it("replays the first answer, says so, and charges the call once: a second authorization under the key is not settled", async () => {
    const payer = await fundedWallet(setup.chains.base, 51_001);
    const sign = () =>
      signAuthorization({ account: payer, chain: setup.chains.base, value: PRICE });
    const [one, two] = [await sign(), await sign()];
    const headers = (payload: typeof one) => ({
      "x-payment": v1Header("base-sepolia", payload),
      "idempotency-key": "paid-once",
    });
    const first = await callHash(headers(one), "idem");
    const again = await callHash(headers(two), "idem");
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("x-payment-response")).toBeNull(); // nothing was settled for it
    expect(again.body).toEqual(first.body);
    expect(await authorizationUsed(setup.chains.base, payer.address, two.authorization.nonce)).toBe(
      false,
    );
    expect(await balanceOf(setup.chains.base, payer.address)).toBe(1_000_000n - PRICE);
    expect(await ledgerOf(walletAccountId(payer.address))).toEqual([
      ["debit", -1],
      ["purchase", 1],
      ["grant", 0],
    ]);
  }, 30_000);
});

describe("a paid call's rate-limit headers", () => {
  /** The wallet account's window as an answer states it: [limit, remaining, reset seconds]. */
  const rateOf = (res: { headers: Headers }) =>
    ["ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"].map((h) =>
      Number(res.headers.get(h)),
    );

  it("state the wallet account's window with the paid request counted, served, replayed or under a used key", async () => {
    const payer = await fundedWallet(setup.chains.base, 51_201);
    const sign = () =>
      signAuthorization({ account: payer, chain: setup.chains.base, value: PRICE });
    const [one, two] = [await sign(), await sign()];
    const first = await callHash({ "x-payment": v1Header("base-sepolia", one) }, "rate");
    // The same payment again: a replay, counted as a request of its own.
    const again = await callHash({ "x-payment": v1Header("base-sepolia", one) }, "rate");
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const [limit, remaining, reset] = rateOf(first);
    // A fresh wallet's first request: one slot of the Free tier's 60 taken, freed within the minute.
    expect([limit, remaining]).toEqual([60, 59]);
    expect(reset).toBeGreaterThan(0);
    expect(rateOf(again).slice(0, 2)).toEqual([60, 58]);

    // A new authorization under a key already answered: not settled, still counted.
    const keyed = (payload: typeof one) => ({
      "x-payment": v1Header("base-sepolia", payload),
      "idempotency-key": "rate-headers",
    });
    const three = await sign();
    const keyedFirst = await callHash(keyed(two), "rate-keyed");
    const keyedAgain = await callHash(keyed(three), "rate-keyed");
    expect([keyedFirst.status, keyedAgain.status]).toEqual([200, 200]);
    expect(keyedAgain.headers.get("x-payment-response")).toBeNull();
    expect(rateOf(keyedFirst).slice(0, 2)).toEqual([60, 57]);
    expect(rateOf(keyedAgain).slice(0, 2)).toEqual([60, 56]);
  }, 30_000);
});

describe("a paid call the tool refuses after the payment settled", () => {
  it("says the payment stays as credits on the wallet's account, and how to spend them", async () => {
    const payer = await fundedWallet(setup.chains.base, 51_202);
    // web-fetch costs 3 credits; the worker refuses a loopback address only once it resolves it.
    const payment = await signAuthorization({
      account: payer,
      chain: setup.chains.base,
      value: 3n * PRICE,
    });
    const res = await call(`${setup.gw.url}/v1/tools/web-fetch`, {
      method: "POST",
      body: { url: "http://127.0.0.1:9/" },
      headers: { "x-payment": v1Header("base-sepolia", payment) },
    });
    expect([res.status, res.body.error.code]).toEqual([422, "validation_failed"]);
    expect(decode(res.headers.get("x-payment-response"))).toMatchObject({ success: true });
    expect(res.body.error.message).toMatch(
      / The payment was credited to the paying wallet's account \(3 credits\) and stays there: an API key for the wallet's account \(POST \/api\/v1\/wallet\/challenge, then \/api\/v1\/wallet\/claim\) spends them\.$/,
    );
    expect((await ledgerOf(walletAccountId(payer.address))).slice(0, 3)).toEqual([
      ["refund", 3],
      ["debit", -3],
      ["purchase", 3],
    ]);
  }, 30_000);
});

describe("a new authorization under the Idempotency-Key of a paid call that failed", () => {
  it("pays for the same call from the first payment, and for another call is 409, unsettled and without a receipt", async () => {
    const payer = await fundedWallet(setup.chains.base, 51_203);
    const accountId = walletAccountId(payer.address);
    const sign = (credits: bigint) =>
      signAuthorization({ account: payer, chain: setup.chains.base, value: credits * PRICE });
    type Payload = Awaited<ReturnType<typeof sign>>;
    const paidCall = (tool: string, body: unknown, payload: Payload) =>
      call(`${setup.gw.url}/v1/tools/${tool}`, {
        method: "POST",
        body,
        headers: { "x-payment": v1Header("base-sepolia", payload), "idempotency-key": "ik-failed" },
      });
    const unused = (payload: Payload) =>
      authorizationUsed(setup.chains.base, payer.address, payload.authorization.nonce).then(
        (used) => !used,
      );
    // web-fetch (3 credits) refuses a loopback address once its worker resolves it: paid,
    // refunded as credits, the key's idempotency record dropped so the call may be retried.
    const failing = { url: "http://127.0.0.1:9/" };
    const first = await paidCall("web-fetch", failing, await sign(3n));
    expect([first.status, first.body.error.code]).toEqual([422, "validation_failed"]);
    const firstReceipt = decode(first.headers.get("x-payment-response"));
    expect(firstReceipt).toMatchObject({ success: true });

    // Another tool (hash, 1 credit) under the key, with a new authorization of its price: the
    // key's call has a payment, made for another call. Before, the new authorization was bound to
    // that payment and never settled, and hash ran on the failed call's credits (with that
    // payment's receipt); a dearer tool found the account short (402, saying its own price had
    // been credited and stayed there).
    const otherTool = await sign(1n);
    const elsewhere = await paidCall("hash", { text: "other" }, otherTool);
    expect([elsewhere.status, elsewhere.body.error?.code, elsewhere.body.error?.param]).toEqual([
      409,
      "idempotency_conflict",
      "Idempotency-Key",
    ]);
    expect(elsewhere.body.error.message).toMatch(/nothing was charged/);
    expect(elsewhere.headers.get("x-payment-response")).toBeNull();
    expect(elsewhere.headers.get("payment-response")).toBeNull();
    // The same tool with another body: 409 too, not run on the first call's credits.
    const otherBody = await sign(3n);
    const conflict = await paidCall("web-fetch", { url: "http://127.0.0.1:10/" }, otherBody);
    expect([conflict.status, conflict.body.error.code]).toEqual([409, "idempotency_conflict"]);
    expect(conflict.headers.get("x-payment-response")).toBeNull();

    // The same call, paid again under the key: the first payment pays for it (never twice).
    const same = await sign(3n);
    const retried = await paidCall("web-fetch", failing, same);
    expect([retried.status, retried.body.error.code]).toEqual([422, "validation_failed"]);
    expect(decode(retried.headers.get("x-payment-response")).transaction).toBe(
      firstReceipt.transaction,
    );
    expect(retried.body.error.message).toMatch(
      /The payment was credited to the paying wallet's account \(3 credits\) and stays there/,
    );

    // Its credits spent elsewhere, the same call again finds the account short: the answer does
    // not say the payment stays there, and the authorization sent is not settled.
    const spent = await setup.gw.services.store.admit({
      accountId,
      keyHash: null,
      cost: 3,
      requestId: "test-spend-the-failed-call-credits",
      tool: null,
      reason: "test: spend the credits elsewhere",
      countRequest: false,
    });
    expect(spent.status).toBe("ok");
    const short = await sign(3n);
    const broke = await paidCall("web-fetch", failing, short);
    expect([broke.status, broke.body.error.code]).toEqual([402, "insufficient_credits"]);
    expect(broke.body.error.message).not.toMatch(/stays there/);
    expect(broke.body.error.message).toMatch(
      /have been spent since: it pays for nothing more\. Pay for this call with a new authorization under another Idempotency-Key/,
    );

    for (const payload of [otherTool, otherBody, same, short])
      expect(await unused(payload)).toBe(true);
    expect(await balanceOf(setup.chains.base, payer.address)).toBe(1_000_000n - 3n * PRICE);
    expect(await ledgerOf(accountId)).toEqual([
      ["debit", -3],
      ["refund", 3],
      ["debit", -3],
      ["refund", 3],
      ["debit", -3],
      ["purchase", 3],
      ["grant", 0],
    ]);
  }, 30_000);
});

describe("a paid call with an x402 payment identifier (a new authorization each time)", () => {
  /** A v2 payment of the hash tool signed by `payer`, named `id` with the payment-identifier extension. */
  const payment = async (payer: LocalAccount, id: string) => {
    const [accepted] = decode((await callHash()).headers.get("payment-required")).accepts;
    const payload = await signAuthorization({
      account: payer,
      chain: setup.chains.base,
      value: PRICE,
    });
    return {
      nonce: payload.authorization.nonce,
      headers: { "payment-signature": v2Header(accepted, payload, id) },
    };
  };
  const unused = (payer: LocalAccount, nonce: string) =>
    authorizationUsed(setup.chains.base, payer.address, nonce).then((used) => !used);

  it("answers the same body from the stored answer without settling; another body or tool is 409, unsettled too", async () => {
    const payer = await fundedWallet(setup.chains.base, 51_002);
    const id = "pay_rest_0123456789ab";
    const first = await callHash((await payment(payer, id)).headers, "named");
    expect(first.status).toBe(200);
    expect(decode(first.headers.get("payment-response"))).toMatchObject({
      success: true,
      network: "eip155:84532",
    });
    // The tool's time, the payment's (verified and settled on chain) and the gateway's, apart.
    expect(first.headers.get("server-timing")).toMatch(
      /^tool;dur=[\d.]+, payment;dur=[\d.]+, gateway;dur=[\d.]+$/,
    );

    const retry = await payment(payer, id);
    const again = await callHash(retry.headers, "named");
    expect([again.status, again.headers.get("idempotent-replayed"), again.body]).toEqual([
      200,
      "true",
      first.body,
    ]);
    expect(again.headers.get("payment-response")).toBeNull();
    expect(again.headers.get("server-timing")).toMatch(/^gateway;dur=[\d.]+$/);

    const otherBody = await payment(payer, id);
    const conflict = await callHash(otherBody.headers, "another body");
    expect([conflict.status, conflict.body.error.code, conflict.body.error.param]).toEqual([
      409,
      "idempotency_conflict",
      "payment",
    ]);
    // qr-code costs what hash costs: the same requirement pays for it, but the identifier named a hash call.
    const otherTool = await payment(payer, id);
    const elsewhere = await call(`${setup.gw.url}/v1/tools/qr-code`, {
      method: "POST",
      body: { text: "named" },
      headers: otherTool.headers,
    });
    expect([elsewhere.status, elsewhere.body.error.code]).toEqual([409, "idempotency_conflict"]);

    for (const { nonce } of [retry, otherBody, otherTool])
      expect(await unused(payer, nonce)).toBe(true);
    expect(await balanceOf(setup.chains.base, payer.address)).toBe(1_000_000n - PRICE);
    expect(await ledgerOf(walletAccountId(payer.address))).toEqual([
      ["debit", -1],
      ["purchase", 1],
      ["grant", 0],
    ]);
  }, 30_000);

  it("a second authorization sent while the first is still settling waits for it and gets its answer, unsettled", async () => {
    const payer = await fundedWallet(setup.chains.base, 51_003);
    const id = "pay_rest_settling_0001";
    const [one, two] = [await payment(payer, id), await payment(payer, id)];
    const rpc = createPublicClient({ transport: http(setup.chains.base.rpcUrl) });
    // No blocks while the first settles: its transaction waits in the mempool until we mine.
    await rpc.request({ method: "evm_setAutomine" as never, params: [false] as never });
    try {
      const first = callHash(one.headers, "slow");
      const paymentId =
        `84532:${setup.chains.base.usdc}:${payer.address}:${one.nonce}`.toLowerCase();
      while ((await setup.gw.services.store.getPayment(paymentId))?.state !== "settling")
        await new Promise((r) => setTimeout(r, 20));
      const second = callHash(two.headers, "slow");
      await new Promise((r) => setTimeout(r, 500)); // the second is verified and waiting on the first
      await rpc.request({ method: "evm_setAutomine" as never, params: [true] as never });
      await rpc.request({ method: "evm_mine" as never, params: [] as never });
      const [a, b] = await Promise.all([first, second]);
      expect([a.status, b.status, b.headers.get("idempotent-replayed")]).toEqual([
        200,
        200,
        "true",
      ]);
      expect(b.body).toEqual(a.body);
    } finally {
      await rpc.request({ method: "evm_setAutomine" as never, params: [true] as never });
    }
    expect(await unused(payer, two.nonce)).toBe(true);
    expect(await balanceOf(setup.chains.base, payer.address)).toBe(1_000_000n - PRICE);
    expect(await ledgerOf(walletAccountId(payer.address))).toEqual([
      ["debit", -1],
      ["purchase", 1],
      ["grant", 0],
    ]);
  }, 30_000);
});

describe("the payment phases operators see in /metrics", () => {
  it("count each new payment's verify, settle and credit once, on its network, and not a replay of it", async () => {
    const phases = async () => {
      const text = await (await fetch(`${setup.gw.url}/metrics`)).text();
      const read = (phase: string, part: "count" | "sum") =>
        Number(
          new RegExp(
            `toolgate_payment_phase_seconds_${part}\\{phase="${phase}",network="base-sepolia"\\} ([0-9.e-]+)`,
          ).exec(text)?.[1] ?? 0,
        );
      return Object.fromEntries(
        ["verify", "settle", "credit"].map((p) => [p, { n: read(p, "count"), s: read(p, "sum") }]),
      );
    };
    const before = await phases();
    const payer = await fundedWallet(setup.chains.base, 51_101);
    const payload = await signAuthorization({
      account: payer,
      chain: setup.chains.base,
      value: PRICE,
    });
    const headers = { "x-payment": v1Header("base-sepolia", payload) };
    expect((await callHash(headers, "phases")).status).toBe(200);
    const after = await phases();
    for (const phase of ["verify", "settle", "credit"]) {
      expect(after[phase]!.n - before[phase]!.n, phase).toBe(1);
      expect(after[phase]!.s, phase).toBeGreaterThan(before[phase]!.s);
    }
    // The same payment sent again is answered from its record: no phase runs for it.
    expect((await callHash(headers, "phases")).status).toBe(200);
    expect(await phases()).toEqual(after);
  }, 30_000);
});

describe("official clients", () => {
  it("x402-fetch (v1) pays on the Base chain: the tool answers and exactly the price moves", async () => {
    const payer = PAYERS[1]!;
    const wallet = v1ClientWallet(setup.chains.base, payer);
    const [payerBefore, payToBefore] = [
      await balanceOf(setup.chains.base, payer.address),
      await balanceOf(setup.chains.base, PAY_TO),
    ];
    const paidFetch = wrapV1(fetch, wallet as never);
    const res = await paidFetch(`${setup.gw.url}/v1/tools/hash`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: "hello world" }),
    });
    expect(res.status).toBe(200);
    expect((await res.json()).digest).toBe(
      "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9",
    );
    const receipt = decode(res.headers.get("x-payment-response"));
    expect(receipt).toMatchObject({
      success: true,
      network: "base-sepolia",
      payer: payer.address,
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    expect(res.headers.get("payment-response")).toBe(res.headers.get("x-payment-response"));
    expect(await balanceOf(setup.chains.base, payer.address)).toBe(payerBefore - PRICE);
    expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(payToBefore + PRICE);

    const accountId = walletAccountId(payer.address);
    expect(await ledgerOf(accountId)).toEqual([
      ["debit", -1],
      ["purchase", 1],
      ["grant", 0],
    ]);
    const received = (await eventsOf(setup.gw.services.store, accountId, 2)).find(
      (e) => e.event === "payment.received",
    );
    expect(received?.data).toMatchObject({
      type: "one_time",
      credits_added: 1,
      amount_usd: "0.002",
      amount_usdc_atomic: "2000",
      plan: null,
      agent_id: accountId,
      network: "base-sepolia",
      transaction: receipt.transaction,
    });
  }, 30_000);

  it("@x402/fetch (v2) pays on the Polygon chain", async () => {
    const payer = PAYERS[2]!;
    // The client pays on Polygon only, and opts in to our test token (it is not the canonical USDC address).
    const paidFetch = wrapFetchWithPaymentFromConfig(fetch, {
      schemes: [{ network: "eip155:80002", client: new ExactEvmScheme(payer) }],
      spendControls: {
        allowedAssets: [{ network: "eip155:80002", asset: setup.chains.polygon.usdc }],
      },
    });
    const payToBefore = await balanceOf(setup.chains.polygon, PAY_TO);
    const res = await paidFetch(`${setup.gw.url}/v1/tools/hash`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ text: "v2" }),
    });
    expect(res.status).toBe(200);
    expect(decode(res.headers.get("payment-response"))).toMatchObject({
      success: true,
      network: "eip155:80002",
      payer: payer.address,
    });
    expect(await balanceOf(setup.chains.polygon, PAY_TO)).toBe(payToBefore + PRICE);
    expect(await ledgerOf(walletAccountId(payer.address))).toEqual([
      ["debit", -1],
      ["purchase", 1],
      ["grant", 0],
    ]);
  }, 30_000);
});

/**
 * A 402's headers behind a reverse proxy (nginx buffers 4 or 8 KiB of them) and in Node's fetch
 * (16 KiB): spreadsheet-read's offer, with its example (a workbook, base64) and input schema in
 * the bazaar extension, was 27 KB, and no official client could read it.
 */
describe("the 402 of a tool whose whole description is large", () => {
  /** A keyless call read without a limit on its headers' size. */
  const raw = (tool: string, body: unknown) =>
    new Promise<{
      status: number;
      headers: Record<string, string | string[] | undefined>;
      size: number;
    }>((resolve, reject) => {
      const url = new URL(`${setup.gw.url}/v1/tools/${tool}`);
      const req = httpRequest(
        url,
        {
          method: "POST",
          headers: { "content-type": "application/json" },
          maxHeaderSize: 1 << 20,
        },
        (res) => {
          res.resume();
          // The status line, each header as "name: value\r\n", and the blank line.
          const size =
            `HTTP/1.1 ${res.statusCode} ${res.statusMessage}\r\n`.length +
            res.rawHeaders.reduce((n, h) => n + h.length + 2, 0) +
            2;
          resolve({ status: res.statusCode!, headers: res.headers, size });
        },
      );
      req.on("error", reject);
      req.end(JSON.stringify(body));
    });
  const exampleOf = async (tool: string) =>
    (await call(`${setup.gw.url}/v1/tools/${tool}`)).body.input_schema.examples[0];

  it("every catalogue tool's PAYMENT-REQUIRED fits its budget, with a valid bazaar extension", async () => {
    const tools = (await call(`${setup.gw.url}/v1/tools`)).body.data as {
      name: string;
      available: boolean;
      input_schema: { examples?: unknown[] };
    }[];
    expect(tools.length).toBeGreaterThan(50);
    const over: string[] = [];
    // Over HTTP, every tool this gateway can serve (the AI tools have no provider here: 503)...
    for (const tool of tools.filter((t) => t.available)) {
      const res = await raw(tool.name, tool.input_schema.examples?.[0] ?? {});
      expect([tool.name, res.status]).toEqual([tool.name, 402]);
      const header = res.headers["payment-required"] as string;
      // ...with the 402's other headers, within a reverse proxy's 4 KiB.
      if (header.length > PAYMENT_REQUIRED_BUDGET || res.size > 4096)
        over.push(`${tool.name}: ${header.length} (${res.size} in all)`);
      const { bazaar } = decode(header).extensions;
      if (bazaar)
        expect([tool.name, validateDiscoveryExtension(bazaar)]).toEqual([
          tool.name,
          { valid: true },
        ]);
    }
    // ...and the whole catalogue's offers, as a gateway taking all four networks makes them.
    const x402 = setup.gw.services.payments!.config;
    const fourNetworks = { ...x402, networks: [...x402.networks, ...x402.networks] };
    for (const tool of TOOLS) {
      const offer = offerFor(
        fourNetworks,
        10n ** 12n,
        `https://toolgate.example.com/v1/tools/${tool.name}`,
        `${tool.title}: one call (${tool.cost} credits)`,
        toolOfferExtensions(tool),
      );
      const header = paymentChallenge("payment_required", "Payment required.", offer).options
        .headers!["PAYMENT-REQUIRED"]!;
      if (header.length > PAYMENT_REQUIRED_BUDGET) over.push(`${tool.name}: ${header.length}`);
      const { bazaar } = decode(header).extensions;
      if (bazaar)
        expect([tool.name, validateDiscoveryExtension(bazaar)]).toEqual([
          tool.name,
          { valid: true },
        ]);
    }
    expect(over).toEqual([]);
  }, 60_000);

  it("keeps the example and schemas where they fit, and points to the tool's document where they do not", async () => {
    const hash = decode((await raw("hash", { text: "x" })).headers["payment-required"] as string);
    expect(hash.extensions.bazaar.info.input.body).toEqual(await exampleOf("hash"));
    const sheet = (await raw("spreadsheet-read", await exampleOf("spreadsheet-read"))).headers;
    const { bazaar } = decode(sheet["payment-required"] as string).extensions;
    expect(bazaar.info.input).toEqual({ type: "http", method: "POST", bodyType: "json", body: {} });
    expect(bazaar.schema.properties.input.properties.body).toEqual({
      type: "object",
      description: "The input schema and an example: GET /v1/tools/spreadsheet-read",
    });
    // Its full description stays in /.well-known/x402, a body.
    const doc = (await call(`${setup.gw.url}/.well-known/x402`)).body;
    const entry = doc.resources.find((r: { resource: string }) =>
      r.resource.endsWith("/v1/tools/spreadsheet-read"),
    );
    expect(entry.extensions.bazaar.info.input.body).toEqual(await exampleOf("spreadsheet-read"));
  });

  it("/.well-known/x402 offers only the tools that can run now: one whose provider is not configured is left out, as GET /v1/tools says", async () => {
    const catalogue = (await call(`${setup.gw.url}/v1/tools`)).body.data as {
      name: string;
      available: boolean;
    }[];
    const unavailable = catalogue.filter((t) => !t.available).map((t) => t.name);
    expect(unavailable).toContain("ai-extract");
    const doc = (await call(`${setup.gw.url}/.well-known/x402`)).body;
    const offered = (doc.resources as { resource: string }[])
      .map((r) => new URL(r.resource).pathname)
      .filter((path) => path.startsWith("/v1/tools/"))
      .map((path) => path.slice("/v1/tools/".length));
    expect(offered.sort()).toEqual(
      catalogue
        .filter((t) => t.available)
        .map((t) => t.name)
        .sort(),
    );
  });

  it("official clients pay for spreadsheet-read: @x402/fetch (v2) and x402-fetch (v1)", async () => {
    const body = JSON.stringify(await exampleOf("spreadsheet-read"));
    const payer = PAYERS[3]!;
    const v2 = wrapFetchWithPaymentFromConfig(fetch, {
      schemes: [{ network: "eip155:84532", client: new ExactEvmScheme(payer) }],
      spendControls: {
        allowedAssets: [{ network: "eip155:84532", asset: setup.chains.base.usdc }],
      },
    });
    const wallet = v1ClientWallet(setup.chains.base, payer);
    const v1 = wrapV1(fetch, wallet as never);
    for (const paidFetch of [v2, v1]) {
      const before = await balanceOf(setup.chains.base, payer.address);
      const res = await paidFetch(`${setup.gw.url}/v1/tools/spreadsheet-read`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      expect(res.status).toBe(200);
      expect((await res.json()).sheets).toBeDefined();
      expect(await balanceOf(setup.chains.base, payer.address)).toBe(before - 3n * PRICE);
    }
  }, 60_000);

  it("a keyed caller short of credits reads spreadsheet-read's 402 with plain fetch", async () => {
    const { signUp } = await import("../helpers/gateway.js");
    const { key } = await signUp(setup.gw.url);
    // 25 credits: 23 hash calls leave 2, short of spreadsheet-read's 3.
    for (let i = 0; i < 23; i++)
      expect(
        (await call(`${setup.gw.url}/v1/tools/hash`, { key, body: { text: String(i) } })).status,
      ).toBe(200);
    const res = await fetch(`${setup.gw.url}/v1/tools/spreadsheet-read`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": key },
      body: JSON.stringify(await exampleOf("spreadsheet-read")),
    });
    expect([res.status, ((await res.json()) as { error: { code: string } }).error.code]).toEqual([
      402,
      "insufficient_credits",
    ]);
    expect(decode(res.headers.get("payment-required")).accepts).toHaveLength(2);
  });
});
