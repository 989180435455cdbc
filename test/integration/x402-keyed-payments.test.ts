import { wrapFetchWithPaymentFromConfig } from "@x402/fetch";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import type { LocalAccount } from "viem";
import { wrapFetchWithPayment as wrapV1 } from "x402-fetch";
import { describe, expect, it } from "vitest";
import { randomWallet } from "../../chain-fixtures/chain.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { call, fundedAccount } from "../helpers/gateway.js";
import {
  PAY_TO,
  authorizationUsed,
  balanceOf,
  fundedWallet,
  paidGatewayFixture,
  signAuthorization,
  v1Header,
  v1ClientWallet,
} from "../helpers/x402.js";

/**
 * A keyed REST caller short of credits pays for the call with x402 and keeps sending its key, as
 * the official x402 fetch wrappers do: the payment is settled once, credited to the key's account,
 * and the call charged from it as the key's. A refused key or key control takes no money.
 * Real anvil chains, the project's EIP-3009 token and real Redis. hash costs 1 credit = 2,000 units.
 */
const PRICE = 2000n;
const setup = paidGatewayFixture();

const decode = (header: string | null) =>
  JSON.parse(Buffer.from(header ?? "", "base64").toString("utf8"));
const ledgerOf = async (accountId: string) =>
  (await setup.gw.services.store.ledger(accountId, { limit: 100 })).items.map((e) => [
    e.kind,
    e.amount,
  ]);
const callHash = (key: string, headers: Record<string, string> = {}, text = "keyed") =>
  call(`${setup.gw.url}/v1/tools/hash`, { method: "POST", key, body: { text }, headers });
const createKey = (key: string, body: Record<string, unknown>) =>
  call(`${setup.gw.url}/api/v1/keys`, { key, body });
const payment = async (payer: LocalAccount) =>
  v1Header(
    "base-sepolia",
    await signAuthorization({ account: payer, chain: setup.chains.base, value: PRICE }),
  );

/** An account whose sign-up credits are spent: its key's next call is 402 insufficient_credits. */
async function emptyAccount() {
  const account = await fundedAccount(setup.gw.url, 0);
  const outcome = await setup.gw.services.store.admit({
    accountId: account.accountId,
    keyHash: null,
    cost: 25,
    requestId: "test-spend-sign-up-credits",
    tool: null,
    reason: "test: spend the sign-up credits",
    countRequest: false,
  });
  expect([outcome.status, outcome.status === "ok" && outcome.account.balance]).toEqual(["ok", 0]);
  return { ...account, ledger: await ledgerOf(account.accountId) };
}

/** What a refused keyed payment must leave: the authorization unused, no money and no credit moved. */
async function expectNothingTaken(
  payer: LocalAccount,
  accountId: string,
  ledger: unknown[],
  nonce: string,
) {
  expect(await authorizationUsed(setup.chains.base, payer.address, nonce)).toBe(false);
  expect(await ledgerOf(accountId)).toEqual(ledger);
  expect(await setup.gw.services.store.getAccount(walletAccountId(payer.address))).toBeNull();
}

const nonceOf = (header: string) => decode(header).payload.authorization.nonce as string;

describe("a keyed call with an x402 payment", () => {
  it("a blank payment header is no payment: the keyed call is served and charged to the key, as without it", async () => {
    const { key, accountId } = await fundedAccount(setup.gw.url, 10);
    for (const header of ["payment-signature", "x-payment"]) {
      const res = await callHash(key, { [header]: "" });
      expect([res.status, res.body.error?.code], header).toEqual([200, undefined]);
    }
    expect((await ledgerOf(accountId)).filter(([kind]) => kind === "debit")).toEqual([
      ["debit", -1],
      ["debit", -1],
    ]);
  });

  it("x402-fetch (v1) with the key in its headers: the 402 offer is paid once, credited to the key's account and the call charged from it", async () => {
    const payer = await fundedWallet(setup.chains.base, 53_001);
    const { key, accountId, ledger } = await emptyAccount();
    const unpaid = await callHash(key);
    expect([unpaid.status, unpaid.body.error.code]).toEqual([402, "insufficient_credits"]);

    const wallet = v1ClientWallet(setup.chains.base, payer);
    const [payerBefore, payToBefore] = [
      await balanceOf(setup.chains.base, payer.address),
      await balanceOf(setup.chains.base, PAY_TO),
    ];
    const res = await wrapV1(fetch, wallet as never)(`${setup.gw.url}/v1/tools/hash`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": key },
      body: JSON.stringify({ text: "hello world" }),
    });
    expect(res.status).toBe(200);
    expect((await res.json()).digest).toBe(
      "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9",
    );
    expect(decode(res.headers.get("x-payment-response"))).toMatchObject({
      success: true,
      network: "base-sepolia",
      payer: payer.address,
    });
    expect(res.headers.get("x-credits-charged")).toBe("1");
    expect(res.headers.get("x-credits-remaining")).toBe("0");
    // A keyed answer: the key's rate limit as it stands, this request counted once.
    expect(Number(res.headers.get("ratelimit-remaining"))).toBe(
      Number(res.headers.get("ratelimit-limit")) - 3,
    );
    expect(await balanceOf(setup.chains.base, payer.address)).toBe(payerBefore - PRICE);
    expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(payToBefore + PRICE);
    expect(await ledgerOf(accountId)).toEqual([["debit", -1], ["purchase", 1], ...ledger]);
    // The key's account bought the credits: the wallet has no account of its own.
    expect(await setup.gw.services.store.getAccount(walletAccountId(payer.address))).toBeNull();
  }, 30_000);

  it("@x402/fetch (v2) with the key in its headers pays the PAYMENT-REQUIRED offer on the Polygon chain", async () => {
    const payer = await fundedWallet(setup.chains.polygon, 53_002);
    const { key, accountId, ledger } = await emptyAccount();
    const paidFetch = wrapFetchWithPaymentFromConfig(fetch, {
      schemes: [{ network: "eip155:80002", client: new ExactEvmScheme(payer) }],
      spendControls: {
        allowedAssets: [{ network: "eip155:80002", asset: setup.chains.polygon.usdc }],
      },
    });
    const payToBefore = await balanceOf(setup.chains.polygon, PAY_TO);
    const res = await paidFetch(`${setup.gw.url}/v1/tools/hash`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": key },
      body: JSON.stringify({ text: "v2" }),
    });
    expect(res.status).toBe(200);
    expect(decode(res.headers.get("payment-response"))).toMatchObject({
      success: true,
      network: "eip155:80002",
      payer: payer.address,
    });
    expect(await balanceOf(setup.chains.polygon, PAY_TO)).toBe(payToBefore + PRICE);
    expect(await ledgerOf(accountId)).toEqual([["debit", -1], ["purchase", 1], ...ledger]);
  }, 30_000);

  it("is idempotent on the payment: the same payment sent again replays the answer, paid and charged once", async () => {
    const payer = await fundedWallet(setup.chains.base, 53_003);
    const { key, accountId, ledger } = await emptyAccount();
    const header = await payment(payer);
    const payerBefore = await balanceOf(setup.chains.base, payer.address);
    const first = await callHash(key, { "x-payment": header });
    expect(first.status).toBe(200);
    const again = await callHash(key, { "x-payment": header });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await balanceOf(setup.chains.base, payer.address)).toBe(payerBefore - PRICE);
    expect(await ledgerOf(accountId)).toEqual([["debit", -1], ["purchase", 1], ...ledger]);
    // The same payment for another body is not a second call.
    const other = await callHash(key, { "x-payment": header }, "another body");
    expect([other.status, other.body.error.code]).toEqual([409, "idempotency_conflict"]);
    expect(await ledgerOf(accountId)).toEqual([["debit", -1], ["purchase", 1], ...ledger]);
  }, 30_000);

  it("is the key's: sent again without the key, even once the key is revoked, it runs nothing on the key's account (409)", async () => {
    const payer = await fundedWallet(setup.chains.base, 53_011);
    const { key, keyId, accountId } = await emptyAccount();
    // web-fetch (3 credits): the worker refuses a loopback address once it resolves it, after
    // the payment settled, so the credits stay on the key's account for a retry of this call.
    const header = v1Header(
      "base-sepolia",
      await signAuthorization({ account: payer, chain: setup.chains.base, value: 3n * PRICE }),
    );
    const fetchLoopback = (headers: Record<string, string>, withKey?: string) =>
      call(`${setup.gw.url}/v1/tools/web-fetch`, {
        method: "POST",
        key: withKey,
        body: { url: "http://127.0.0.1:9/" },
        headers,
      });
    const first = await fetchLoopback({ "x-payment": header }, key);
    expect([first.status, first.body.error.code]).toEqual([422, "validation_failed"]);
    const revoked = await call(`${setup.gw.url}/api/v1/keys/${keyId}?force=true`, {
      method: "DELETE",
      key,
    });
    expect(revoked.status).toBe(200);
    const ledger = await ledgerOf(accountId);

    const keyless = await fetchLoopback({ "x-payment": header });
    expect([keyless.status, keyless.body.error.code]).toEqual([409, "payment_already_used"]);
    expect(keyless.body.error.message).toContain("with the same key");
    // Nothing of the account's shown: counted per client address (no account admitted it).
    expect(keyless.headers.get("ratelimit-policy")).toBe("600;w=60");
    expect(await ledgerOf(accountId)).toEqual(ledger);
  }, 30_000);

  it("a payment that cannot settle is refused 402 payment_invalid with the reason and the offer; nothing moves", async () => {
    const broke = randomWallet(53_101);
    const { key, accountId, ledger } = await emptyAccount();
    const header = await payment(broke);
    const res = await callHash(key, { "x-payment": header });
    expect([res.status, res.body.error.code]).toEqual([402, "payment_invalid"]);
    expect(res.body.error.reason).toEqual(expect.any(String));
    expect(res.body.accepts).toHaveLength(2);
    await expectNothingTaken(broke, accountId, ledger, nonceOf(header));
  }, 30_000);

  it("a revoked or unknown key is refused 401 before the payment is looked at; no money is taken", async () => {
    const payer = await fundedWallet(setup.chains.base, 53_004);
    const { key, accountId, ledger } = await emptyAccount();
    const second = (await createKey(key, {})).body;
    await call(`${setup.gw.url}/api/v1/keys/${second.id}`, { key, method: "DELETE" });
    const header = await payment(payer);
    const revoked = await callHash(second.key, { "x-payment": header });
    expect([revoked.status, revoked.body.error.code]).toEqual([401, "api_key_revoked"]);
    const unknown = await callHash(`${key.slice(0, -4)}0000`, { "x-payment": header });
    expect([unknown.status, unknown.body.error.code]).toEqual([401, "invalid_api_key"]);
    await expectNothingTaken(payer, accountId, ledger, nonceOf(header));
  }, 30_000);

  it("the key's controls refuse the call before any payment is taken: allowed tools, budget", async () => {
    const payer = await fundedWallet(setup.chains.base, 53_005);
    const { key, accountId } = await emptyAccount();
    const uuidOnly = (await createKey(key, { allowed_tools: ["uuid"] })).body.key;
    let header = await payment(payer);
    const notAllowed = await callHash(uuidOnly, { "x-payment": header });
    expect([notAllowed.status, notAllowed.body.error.code]).toEqual([403, "tool_not_allowed"]);
    await expectNothingTaken(payer, accountId, await ledgerOf(accountId), nonceOf(header));

    // A budget of one credit a day: the first paid call spends it, the second is over it.
    const budgeted = (await createKey(key, { budget: { credits: 1, period: "day" } })).body.key;
    expect((await callHash(budgeted, { "x-payment": header })).status).toBe(200);
    const ledger = await ledgerOf(accountId);
    header = await payment(payer);
    const over = await callHash(budgeted, { "x-payment": header }, "over budget");
    expect([over.status, over.body.error.code]).toEqual([402, "key_budget_exceeded"]);
    expect(await authorizationUsed(setup.chains.base, payer.address, nonceOf(header))).toBe(false);
    expect(await ledgerOf(accountId)).toEqual(ledger);
  }, 30_000);

  it("calls racing a key's budget with their own payments: those the budget holds are paid and served, the others refused before any money moves", async () => {
    const payer = await fundedWallet(setup.chains.base, 53_006);
    const { key, accountId, ledger } = await emptyAccount();
    // A budget of two credits a day, and six calls at once, each with its own authorization.
    const budgeted = (await createKey(key, { budget: { credits: 2, period: "day" } })).body.key;
    const headers = await Promise.all(Array.from({ length: 6 }, () => payment(payer)));
    const before = await balanceOf(setup.chains.base, payer.address);
    const answers = await Promise.all(
      headers.map((header, i) => callHash(budgeted, { "x-payment": header }, `race ${i}`)),
    );
    const served = answers.filter((res) => res.status === 200);
    const refused = answers.filter((res) => res.status !== 200);
    expect(served).toHaveLength(2);
    expect(refused.map((res) => [res.status, res.body.error.code])).toEqual(
      Array.from({ length: 4 }, () => [402, "key_budget_exceeded"]),
    );
    // Refused before the payment was read: no receipt, the authorization unused.
    for (const res of refused) expect(res.headers.get("x-payment-response")).toBeNull();
    const refusedNonces = headers.filter((_, i) => answers[i]!.status !== 200).map(nonceOf);
    for (const nonce of refusedNonces)
      expect(await authorizationUsed(setup.chains.base, payer.address, nonce)).toBe(false);
    // The payer paid for the two calls served, and the account holds no credit it cannot use.
    expect(before - (await balanceOf(setup.chains.base, payer.address))).toBe(2n * PRICE);
    const after = await ledgerOf(accountId);
    expect(after.slice(4)).toEqual(ledger);
    expect(after.slice(0, 4).map(String).sort()).toEqual([
      "debit,-1",
      "debit,-1",
      "purchase,1",
      "purchase,1",
    ]);
    // The budget is spent: a further call is refused, and none is held for calls that were not made.
    const keys = (await call(`${setup.gw.url}/api/v1/keys`, { key })).body.data as {
      budget: { spent: number } | null;
    }[];
    expect(keys.map((k) => k.budget?.spent ?? null)).toContain(2);
  }, 60_000);
});
