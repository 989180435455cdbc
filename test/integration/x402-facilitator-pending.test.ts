import { describe, expect, it } from "vitest";
import { anvilAccount, randomWallet } from "../../chain-fixtures/chain.js";
import { call, fundedAccount } from "../helpers/gateway.js";
import { balanceOf, paidGatewayFixture, signAuthorization } from "../helpers/x402.js";

/**
 * A facilitator settlement whose outcome is unknown (the RPC goes silent right after the send):
 * answered "not yet", finished by the reconciler, never sent twice, the fee charged once.
 */
const PRICE = 10_000n;
const PAYER = anvilAccount(6);
const APP_PAY_TO = randomWallet(77_101).address;
const setup = paidGatewayFixture({
  fund: [PAYER.address],
  proxy: true,
  env: { FACILITATOR_FEE_CREDITS: "5" },
});

/** A Business account and one signed payment to the app, settled through the facilitator API. */
async function facilitation() {
  const { accountId, key, keyId } = await fundedAccount(setup.gw.url, 1000, "business");
  const requirements = {
    scheme: "exact",
    network: "base-sepolia",
    maxAmountRequired: PRICE.toString(),
    resource: "http://app.example/p",
    payTo: APP_PAY_TO,
    maxTimeoutSeconds: 300,
    asset: setup.chains.base.usdc,
    extra: { name: "USDC", version: "2" },
  };
  const payload = await signAuthorization({
    account: PAYER,
    chain: setup.chains.base,
    value: PRICE,
    to: APP_PAY_TO,
  });
  const body = {
    x402Version: 1,
    paymentPayload: { x402Version: 1, scheme: "exact", network: "base-sepolia", payload },
    paymentRequirements: requirements,
  };
  const settle = () => call(`${setup.gw.url}/x402/settle`, { key, body });
  // Each fee row names the key that asked for the settlement, as a tool call's rows do.
  const fees = async () =>
    (await setup.gw.services.store.ledger(accountId, { limit: 100 })).items
      .filter((e) => e.reason.startsWith("facilitator"))
      .map((e) => [e.kind, e.amount, e.keyId === keyId ? "the key" : e.keyId]);
  const credits = async () => (await setup.gw.services.store.getAccount(accountId))!.balance;
  const { authorization } = payload;
  const paymentId =
    `${setup.chains.base.chainId}:${setup.chains.base.usdc}:${authorization.from}:${authorization.nonce}`.toLowerCase();
  return { settle, fees, credits, key, keyId, body, paymentId };
}

/** Reads `read` until `done`, for at most 30 s (past the settling deadline, ~10 s here, when the reconciler takes a payment over). */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The gateway's process "dying" at a facilitator settlement's fee debit: the debit (made first
 * when `debitFirst`) is never answered, so nothing after it runs; the reconciler, which admits
 * with the same store, is let through once it has died.
 */
function diesAtFeeDebit({ debitFirst }: { debitFirst: boolean }) {
  const { store } = setup.gw.services;
  const { admit } = store;
  const dying = { died: false, restore: () => void (store.admit = admit) };
  store.admit = async (request) => {
    if (request.reason !== "facilitator_settle" || dying.died) return admit.call(store, request);
    if (debitFirst) await admit.call(store, request);
    dying.died = true;
    return new Promise(() => {});
  };
  return dying;
}

describe("a facilitator settlement whose outcome is unknown", () => {
  it("answers success:false unexpected_settle_error (payment_pending), is reconciled, and the next settle answers success once", async () => {
    const { settle, fees } = await facilitation();
    const before = await balanceOf(setup.chains.base, APP_PAY_TO);

    setup.proxy.silenceAfterNextSend();
    const first = await settle();
    expect([first.status, first.body.success, first.body.errorReason]).toEqual([
      200,
      false,
      "unexpected_settle_error",
    ]);
    expect(first.body.errorMessage).toMatch(/^payment_pending/);
    // The fee was taken when the payment was claimed, before the money moved.
    expect(await fees()).toEqual([["debit", -5, "the key"]]);

    // Once the reconciler has settled it, the same settle answers success.
    setup.proxy.resume();
    const deadline = Date.now() + 15_000;
    let retry = await settle();
    while (retry.body.success !== true && Date.now() < deadline) {
      expect(retry.body.errorMessage).toMatch(/^payment_pending/);
      await new Promise((r) => setTimeout(r, 200));
      retry = await settle();
    }
    expect([retry.status, retry.body.success, retry.body.network]).toEqual([
      200,
      true,
      "base-sepolia",
    ]);
    expect(await balanceOf(setup.chains.base, APP_PAY_TO)).toBe(before + PRICE);
    const again = await settle();
    expect([again.body.success, again.body.errorReason]).toEqual([
      false,
      "invalid_transaction_state",
    ]);
    expect(await balanceOf(setup.chains.base, APP_PAY_TO)).toBe(before + PRICE);
    expect(await fees()).toEqual([["debit", -5, "the key"]]);
  }, 40_000);
});

describe("a facilitator settlement the node refuses", () => {
  it("gives the fee back, leaves the payment unused, and the same payment then settles with one fee", async () => {
    const { settle, fees, credits } = await facilitation();
    const before = await balanceOf(setup.chains.base, APP_PAY_TO);
    setup.proxy.refuseNextSend();
    const refused = await settle();
    // Refused for the relayer's own reason (no ETH for gas), with no other key to send it: the
    // gateway's trouble, not the payment's.
    expect([refused.status, refused.body.error?.code]).toEqual([503, "chain_unavailable"]);
    expect(refused.headers.get("retry-after")).toBeTruthy();
    expect(await fees()).toEqual([
      ["refund", 5, "the key"],
      ["debit", -5, "the key"],
    ]);
    expect(await credits()).toBe(1000);
    expect(await balanceOf(setup.chains.base, APP_PAY_TO)).toBe(before);

    const again = await settle();
    expect([again.status, again.body.success]).toEqual([200, true]);
    expect(await balanceOf(setup.chains.base, APP_PAY_TO)).toBe(before + PRICE);
    expect(await credits()).toBe(995);
  }, 40_000);
});

describe("a facilitator settlement whose key is revoked while it is verified", () => {
  it("answers the key's 401, charges no fee and leaves the payment unused: another key then settles it", async () => {
    const { settle, fees, credits, key, keyId, body } = await facilitation();
    const spare = await call(`${setup.gw.url}/api/v1/keys`, { key, body: { name: "spare" } });
    expect(spare.status).toBe(201);
    const before = await balanceOf(setup.chains.base, APP_PAY_TO);
    // The door admitted the key; the verification's simulation is held while the key is revoked.
    const held = setup.proxy.hold((b) => b.includes('"eth_call"'));
    const answer = settle();
    await held.until((bodies) => bodies.length > 0);
    expect(
      (await call(`${setup.gw.url}/api/v1/keys/${keyId}?force=true`, { method: "DELETE", key }))
        .status,
    ).toBe(200);
    held.release();
    const refused = await answer;
    expect([refused.status, refused.body.error?.code]).toEqual([401, "api_key_revoked"]);
    expect(await fees()).toEqual([]);
    expect(await credits()).toBe(1000);
    expect(await balanceOf(setup.chains.base, APP_PAY_TO)).toBe(before);

    const settled = await call(`${setup.gw.url}/x402/settle`, { key: spare.body.key, body });
    expect([settled.status, settled.body.success]).toEqual([200, true]);
    expect(await balanceOf(setup.chains.base, APP_PAY_TO)).toBe(before + PRICE);
    expect(await fees()).toEqual([["debit", -5, spare.body.id]]);
  }, 40_000);
});

describe("a facilitator settlement whose fee debit is made unheard and whose release is lost", () => {
  it("is released by the reconciler, never sent without its fee: the fee is given back and the payment settles later with one fee", async () => {
    const { settle, fees, credits, paymentId } = await facilitation();
    const before = await balanceOf(setup.chains.base, APP_PAY_TO);
    const { store } = setup.gw.services;
    const { admit, releasePayment } = store;
    // The fee is debited, then Redis stops answering: the debit's answer is lost, and so is the
    // release of the claim after the fee is given back. The claim stays "settling", fee refunded.
    let lost = false;
    store.admit = async (request) => {
      const outcome = await admit.call(store, request);
      if (request.reason !== "facilitator_settle" || lost) return outcome;
      lost = true;
      throw new Error("Redis went away");
    };
    store.releasePayment = () => Promise.reject(new Error("Redis went away"));
    try {
      const failed = await settle();
      expect(failed.body.success).not.toBe(true);
    } finally {
      store.admit = admit;
      store.releasePayment = releasePayment;
    }
    expect((await store.getPayment(paymentId))?.state).toBe("settling");
    expect(await fees()).toEqual([
      ["refund", 5, "the key"],
      ["debit", -5, "the key"],
    ]);

    // Past the settling deadline the reconciler finds the claim: it finishes its release.
    const left = await until(
      () => store.getPayment(paymentId),
      (record) => record === null || record.state === "settled",
    );
    expect(left).toBeNull();
    expect(await balanceOf(setup.chains.base, APP_PAY_TO)).toBe(before);
    expect(await credits()).toBe(1000);

    const again = await settle();
    expect([again.status, again.body.success]).toEqual([200, true]);
    expect(await balanceOf(setup.chains.base, APP_PAY_TO)).toBe(before + PRICE);
    expect(await credits()).toBe(995);
  }, 60_000);
});

// Last in this file: the settle it leaves hanging holds its request open until the gateway stops.
describe("a facilitator settlement whose process dies between its claim and its fee", () => {
  it("is sent by the reconciler with its fee debited once", async () => {
    const { settle, fees, credits, paymentId } = await facilitation();
    const before = await balanceOf(setup.chains.base, APP_PAY_TO);
    const { store } = setup.gw.services;
    // The process "dies" once the payment is claimed: its fee debit never happens, nothing after it runs.
    const dying = diesAtFeeDebit({ debitFirst: false });
    try {
      void settle().catch(() => undefined); // never answered
      const claimed = await until(
        () => store.getPayment(paymentId),
        () => dying.died,
      );
      expect(claimed?.state).toBe("settling");
      expect(claimed?.feeRequestId).toBeTruthy();

      // Past the settling deadline the reconciler takes the payment over and sends it.
      const settled = await until(
        () => store.getPayment(paymentId),
        (record) => record?.state === "settled",
      );
      expect(settled?.state).toBe("settled");
    } finally {
      dying.restore();
    }
    expect(await balanceOf(setup.chains.base, APP_PAY_TO)).toBe(before + PRICE);
    expect(await fees()).toEqual([["debit", -5, "the key"]]);
    expect(await credits()).toBe(995);

    // The client's retry is answered by the settled payment, charged nothing more.
    const retry = await settle();
    expect([retry.status, retry.body.success]).toEqual([200, true]);
    expect(await fees()).toEqual([["debit", -5, "the key"]]);
  }, 60_000);

  it("is sent with the fee it had taken when the key that asked for it is revoked before the reconciler comes", async () => {
    const { settle, fees, credits, key, keyId, paymentId } = await facilitation();
    const before = await balanceOf(setup.chains.base, APP_PAY_TO);
    const { store } = setup.gw.services;
    // The process "dies" right after its fee debit: nothing after it runs.
    const dying = diesAtFeeDebit({ debitFirst: true });
    try {
      void settle().catch(() => undefined); // never answered
      await until(
        () => store.getPayment(paymentId),
        () => dying.died,
      );
      const revoked = await call(`${setup.gw.url}/api/v1/keys/${keyId}?force=true`, {
        key,
        method: "DELETE",
      });
      expect(revoked.status).toBe(200);
      const settled = await until(
        () => store.getPayment(paymentId),
        (record) => record?.state === "settled",
      );
      expect(settled?.state).toBe("settled");
    } finally {
      dying.restore();
    }
    expect(await balanceOf(setup.chains.base, APP_PAY_TO)).toBe(before + PRICE);
    expect(await fees()).toEqual([["debit", -5, "the key"]]);
    expect(await credits()).toBe(995);
  }, 60_000);
});
