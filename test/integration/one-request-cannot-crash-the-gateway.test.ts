import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anvilAccount } from "../../chain-fixtures/chain.js";
import { PERIOD_MS } from "../../src/accounts/tiers.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { tierLimits } from "../../src/store/index.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis.js";
import { ledgerOf } from "../helpers/books.js";
import {
  balanceOf as creditsOf,
  call,
  dropPrefix,
  fundedAccount,
  spawnGateway,
  uniquePrefix,
  type GatewayProcess,
} from "../helpers/gateway.js";
import { REDIS_URL } from "../helpers/redis.js";
import { PAY_TO, balanceOf, signAuthorization, startChains, v1Header } from "../helpers/x402.js";

/**
 * One request never takes the gateway down (issue 17, item A), against real gateway processes,
 * real Redis and a local chain: a 10 KB body of 5,000 nested arrays is refused at the door, and
 * an exception thrown in a listener while serving a call fails that call alone — answered 500 in
 * the error shape, its debit refunded once — while the process goes on serving.
 */
const PRICE = 2000n; // 1 credit
const KEYLESS = anvilAccount(5);
const FAULTY_PAYER = anvilAccount(7);
const deepBody = `{"schema":{},"data":${"[".repeat(5000)}${"]".repeat(5000)}}`;
const fault = new URL("../helpers/faults/proxy-listener-throws.mjs", import.meta.url).pathname;

let chains: Awaited<ReturnType<typeof startChains>>;
let gw: GatewayProcess;
let faulty: GatewayProcess;
let store: RedisStore;
const prefixes = [uniquePrefix("crash"), uniquePrefix("crash-fault")];
beforeAll(async () => {
  chains = await startChains([KEYLESS.address, FAULTY_PAYER.address]);
  [gw, faulty] = await Promise.all([
    spawnGateway(prefixes[0]!, chains.env),
    spawnGateway(prefixes[1]!, chains.env, ["--import", fault]),
  ]);
  store = createRedisStore({
    url: REDIS_URL,
    keyPrefix: prefixes[1]!,
    tiers: tierLimits(),
    periodMs: PERIOD_MS,
  });
}, 120_000);
afterAll(async () => {
  await Promise.all([gw?.stop(), faulty?.stop()]);
  await store?.close();
  await chains?.stop();
  await Promise.all(prefixes.map(dropPrefix));
});

const alive = (p: GatewayProcess) => p.child.exitCode === null && p.child.signalCode === null;
const paid = async (payer: typeof KEYLESS) => ({
  "x-payment": v1Header(
    "base-sepolia",
    await signAuthorization({ account: payer, chain: chains.base, value: PRICE }),
  ),
});

describe("a 10 KB body of 5,000 nested arrays", () => {
  it("keyed: 413 body_too_deep, nothing charged, and the gateway keeps serving", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    const before = await creditsOf(gw.url, key);
    const res = await call(`${gw.url}/v1/tools/json-schema-validate`, { key, rawBody: deepBody });
    expect([res.status, res.body.error.code, res.body.error.type]).toEqual([
      413,
      "body_too_deep",
      "invalid_request_error",
    ]);
    expect(res.body.error.message).toMatch(/deeper than 64 levels/);
    expect(alive(gw)).toBe(true);
    expect(await creditsOf(gw.url, key)).toBe(before);
    const later = await call(`${gw.url}/v1/tools/json-schema-validate`, {
      key,
      body: { schema: { type: "array" }, data: [[[1]]] },
    });
    expect([later.status, later.body.valid]).toEqual([200, true]);
  });

  it("paid with x402: 413 before any money moves; the same payment then pays for a call", async () => {
    const headers = await paid(KEYLESS);
    const paidBefore = await balanceOf(chains.base, PAY_TO);
    const res = await call(`${gw.url}/v1/tools/json-schema-validate`, {
      rawBody: deepBody,
      headers,
    });
    expect([res.status, res.body.error.code]).toEqual([413, "body_too_deep"]);
    expect(alive(gw)).toBe(true);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(paidBefore);
    const later = await call(`${gw.url}/v1/tools/json-schema-validate`, {
      body: { schema: {}, data: 1 },
      headers,
    });
    expect(later.status).toBe(200);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(paidBefore + PRICE);
  }, 30_000);
});

describe("an exception thrown in a listener while a charged call is forwarded", () => {
  it("keyed: that call is 500 internal_error in the error shape, its debit refunded once; the process serves on", async () => {
    const { key, accountId } = await fundedAccount(faulty.url, 100);
    const before = await creditsOf(faulty.url, key);
    const res = await call(`${faulty.url}/v1/tools/text-diff`, {
      key,
      body: { old: "a", new: "b" },
    });
    expect([res.status, res.body.error.code, res.body.error.type]).toEqual([
      500,
      "internal_error",
      "api_error",
    ]);
    expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
    expect(alive(faulty)).toBe(true);
    expect(await creditsOf(faulty.url, key)).toBe(before);
    const entries = (await ledgerOf(store, accountId)).filter(
      (e) => e.requestId === res.body.error.request_id,
    );
    expect(entries.map((e) => [e.kind, e.amount]).sort()).toEqual([
      ["debit", -1],
      ["refund", 1],
    ]);
    expect(
      (await call(`${faulty.url}/v1/tools/hash`, { key, body: { text: "later" } })).status,
    ).toBe(200);
    // Logged with its request id (request logs are flushed every second).
    await expect
      .poll(
        () =>
          faulty.output.some(
            (line) =>
              line.includes("uncaught exception while serving a request") &&
              line.includes(res.body.error.request_id),
          ),
        { timeout: 5000 },
      )
      .toBe(true);
  }, 30_000);

  it("paid with x402: the payment stays as credits on the payer's account (refunded once), and the process serves on", async () => {
    const paidBefore = await balanceOf(chains.base, PAY_TO);
    const res = await call(`${faulty.url}/v1/tools/text-diff`, {
      body: { old: "a", new: "b" },
      headers: await paid(FAULTY_PAYER),
    });
    expect([res.status, res.body.error.code]).toEqual([500, "internal_error"]);
    expect(res.headers.get("x-payment-response")).toBeTruthy();
    expect(alive(faulty)).toBe(true);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(paidBefore + PRICE);
    const accountId = walletAccountId(FAULTY_PAYER.address);
    expect((await store.getAccount(accountId))?.balance).toBe(1);
    expect((await ledgerOf(store, accountId)).map((e) => [e.kind, e.amount])).toEqual([
      ["refund", 1],
      ["debit", -1],
      ["purchase", 1],
      ["grant", 0],
    ]);
    // The credit left by the failed call pays for the next one.
    const later = await call(`${faulty.url}/v1/tools/hash`, {
      body: { text: "later" },
      headers: await paid(FAULTY_PAYER),
    });
    expect(later.status).toBe(200);
  }, 30_000);
});
