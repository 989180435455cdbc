import { describe, expect, it } from "vitest";
import { anvilAccount } from "../../chain-fixtures/chain.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { call } from "../helpers/gateway.js";
import {
  authorizationUsed,
  balanceOf,
  fundedWallet,
  paidGatewayFixture,
  signAuthorization,
  v1Header,
} from "../helpers/x402.js";

/**
 * A paid call whose answer was not kept for replays (the wallet account's kept answers at
 * IDEMPOTENCY_KEPT_BYTES, here 1 byte: none is kept): a retry is told so, in the words of what
 * made it the same call, and nothing more is settled or charged.
 */
const PRICE = 2000n;
const setup = paidGatewayFixture({
  fund: [anvilAccount(1).address],
  env: { IDEMPOTENCY_KEPT_BYTES: "1" },
});
const callHash = (headers: Record<string, string>, text: string) =>
  call(`${setup.gw.url}/v1/tools/hash`, { method: "POST", body: { text }, headers });
const ledgerOf = async (accountId: string) =>
  (await setup.gw.services.store.ledger(accountId, { limit: 100 })).items.map((e) => [
    e.kind,
    e.amount,
  ]);

describe("a paid call whose answer was not kept", () => {
  it("answers the same payment sent again 409 idempotency_answer_not_kept, asking for a new authorization", async () => {
    const payer = await fundedWallet(setup.chains.base, 52_001);
    const payment = await signAuthorization({
      account: payer,
      chain: setup.chains.base,
      value: PRICE,
    });
    const headers = { "x-payment": v1Header("base-sepolia", payment) };
    expect((await callHash(headers, "once")).status).toBe(200);
    await expect
      .poll(async () => {
        const again = await callHash(headers, "once");
        return [again.status, again.body.error?.code, again.body.error?.param];
      })
      .toEqual([409, "idempotency_answer_not_kept", "payment"]);
    const again = await callHash(headers, "once");
    expect(again.body.error.message).toContain("pay for the call with a new authorization");
    expect(await balanceOf(setup.chains.base, payer.address)).toBe(1_000_000n - PRICE);
    expect(await ledgerOf(walletAccountId(payer.address))).toEqual([
      ["debit", -1],
      ["purchase", 1],
      ["grant", 0],
    ]);
  }, 30_000);

  it("answers a new authorization under the call's Idempotency-Key 409, naming the key, and settles nothing for it", async () => {
    const payer = await fundedWallet(setup.chains.base, 52_002);
    const sign = () =>
      signAuthorization({ account: payer, chain: setup.chains.base, value: PRICE });
    const [one, two] = [await sign(), await sign()];
    const headers = (payload: typeof one) => ({
      "x-payment": v1Header("base-sepolia", payload),
      "idempotency-key": "not-kept",
    });
    expect((await callHash(headers(one), "keyed")).status).toBe(200);
    await expect
      .poll(async () => {
        const again = await callHash(headers(two), "keyed");
        return [again.status, again.body.error?.code, again.body.error?.param];
      })
      .toEqual([409, "idempotency_answer_not_kept", "Idempotency-Key"]);
    expect(await authorizationUsed(setup.chains.base, payer.address, two.authorization.nonce)).toBe(
      false,
    );
    expect(await balanceOf(setup.chains.base, payer.address)).toBe(1_000_000n - PRICE);
  }, 30_000);
});
