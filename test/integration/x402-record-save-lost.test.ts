import { describe, expect, it } from "vitest";
import { anvilAccount } from "../../chain-fixtures/chain.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { StoreUnavailableError } from "../../src/store/errors.js";
import type { PaymentRecord } from "../../src/store/types.js";
import { call, eventsOf } from "../helpers/gateway.js";
import {
  PAY_TO,
  balanceOf,
  ledgerKinds,
  paidGatewayFixture,
  signAuthorization,
  v1Header,
} from "../helpers/x402.js";

/**
 * A paid call's payment record is saved as settled beside the call's admission, not before it. If
 * that save is lost (Redis failing for that one command), the credit it followed still pays for
 * the call, and the reconciler finishes the record later, adding nothing.
 */
const PRICE = 2000n;
const PAYER = anvilAccount(7);
// Short RPC and receipt timeouts: a "settling" record goes stale (reconciler's turn) in ~10 s.
// Not shorter: the paid call's own verification and send must each answer within the RPC
// timeout, and anvil on a loaded machine can take more than 400 ms (a 503 chain_unavailable).
const setup = paidGatewayFixture({
  fund: [PAYER.address],
  env: { X402_RPC_TIMEOUT_MS: "1500", X402_RECEIPT_TIMEOUT_MS: "1000" },
});

describe("a paid call whose settled record cannot be saved", () => {
  it("is served from the credit, charged once, and its record is finished by the reconciler", async () => {
    const { store } = setup.gw.services;
    // The one save of a record as settled fails, as a Redis blip would fail it.
    const save = store.savePayment.bind(store);
    let lost: PaymentRecord | null = null;
    store.savePayment = (record) => {
      if (record.state !== "settled" || lost) return save(record);
      lost = record;
      return Promise.reject(new StoreUnavailableError("Connection is closed."));
    };
    const header = {
      "x-payment": v1Header(
        "base-sepolia",
        await signAuthorization({ account: PAYER, chain: setup.chains.base, value: PRICE }),
      ),
    };
    const payToBefore = await balanceOf(setup.chains.base, PAY_TO);
    const first = await call(`${setup.gw.url}/v1/tools/hash`, {
      method: "POST",
      body: { text: "save lost" },
      headers: header,
    });
    expect(first.status).toBe(200);
    expect(first.body.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(first.headers.get("x-payment-response")).toBeTruthy();
    expect(lost).not.toBeNull();
    const id = lost!.id;
    expect((await store.getPayment(id))?.state).toBe("settling");
    const accountId = walletAccountId(PAYER.address);
    expect((await store.getAccount(accountId))?.balance).toBe(0);

    // The reconciler finds the payment open once its settling deadline passes, and finishes it.
    const deadline = Date.now() + 30_000;
    while ((await store.getPayment(id))?.state !== "settled" && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect((await store.getPayment(id))?.state).toBe("settled");
    expect((await store.getAccount(accountId))?.balance).toBe(0);
    expect(await ledgerKinds(store, accountId)).toEqual([
      ["debit", -1],
      ["purchase", 1],
      ["grant", 0],
    ]);
    const received = (await eventsOf(store, accountId, 2)).filter(
      (e) => e.event === "payment.received",
    );
    expect(received).toHaveLength(1);

    // The same payment again: the stored answer, no second transfer, no second charge.
    const again = await call(`${setup.gw.url}/v1/tools/hash`, {
      method: "POST",
      body: { text: "save lost" },
      headers: header,
    });
    expect([again.status, again.headers.get("idempotent-replayed"), again.body]).toEqual([
      200,
      "true",
      first.body,
    ]);
    expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(payToBefore + PRICE);
    expect((await store.getAccount(accountId))?.balance).toBe(0);
  }, 60_000);
});
