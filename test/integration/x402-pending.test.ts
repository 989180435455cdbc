import { describe, expect, it } from "vitest";
import { anvilAccount } from "../../chain-fixtures/chain.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { call, eventsOf } from "../helpers/gateway.js";
import {
  PAY_TO,
  balanceOf,
  paidGatewayFixture,
  signAuthorization,
  v1Header,
} from "../helpers/x402.js";

/** A chain RPC that stops answering mid-settlement: pending, never a second payment, reconciled once. */
const PRICE = 2000n;
const PAYER = anvilAccount(6);
const setup = paidGatewayFixture({ fund: [PAYER.address], proxy: true });

describe("a settlement whose outcome is unknown", () => {
  it("answers pending (not 402), is credited once when the chain is back, and the retry is served", async () => {
    const header = {
      "x-payment": v1Header(
        "base-sepolia",
        await signAuthorization({ account: PAYER, chain: setup.chains.base, value: PRICE }),
      ),
    };
    const payToBefore = await balanceOf(setup.chains.base, PAY_TO);
    setup.proxy.silenceAfterNextSend();
    const first = await call(`${setup.gw.url}/v1/tools/hash`, {
      method: "POST",
      body: { text: "pending" },
      headers: header,
    });
    expect([first.status, first.body.error.code]).toEqual([503, "payment_pending"]);
    expect(first.headers.get("retry-after")).toBeTruthy();
    // The money moved on chain, but the gateway could not know: nothing is credited yet.
    expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(payToBefore + PRICE);
    const accountId = walletAccountId(PAYER.address);
    expect((await setup.gw.services.store.getAccount(accountId))?.balance ?? 0).toBe(0);
    const whilePending = await call(`${setup.gw.url}/v1/tools/hash`, {
      method: "POST",
      body: { text: "pending" },
      headers: header,
    });
    expect(whilePending.body.error.code).toBe("payment_pending");
    const unsettled = async () =>
      /toolgate_queue_depth\{queue="payments-unsettled"\} (\d+)/.exec(
        await (await fetch(`${setup.gw.url}/metrics`)).text(),
      )?.[1];
    expect(await unsettled()).toBe("1"); // operators see the reconciler's backlog

    setup.proxy.resume();
    const deadline = Date.now() + 15_000;
    while (
      (await setup.gw.services.store.getAccount(accountId))?.balance !== 1 &&
      Date.now() < deadline
    )
      await new Promise((r) => setTimeout(r, 100));
    expect((await setup.gw.services.store.getAccount(accountId))?.balance).toBe(1);
    const received = (await eventsOf(setup.gw.services.store, accountId, 2)).filter(
      (e) => e.event === "payment.received",
    );
    expect(received).toHaveLength(1);
    expect(await unsettled()).toBe("0");

    // The client retries with the same payment: served from the credit, no second transfer.
    const retry = await call(`${setup.gw.url}/v1/tools/hash`, {
      method: "POST",
      body: { text: "pending" },
      headers: header,
    });
    expect(retry.status).toBe(200);
    expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(payToBefore + PRICE);
    expect((await setup.gw.services.store.getAccount(accountId))?.balance).toBe(0);
    // Once more, the same payment and body: the stored answer, not a second call.
    const again = await call(`${setup.gw.url}/v1/tools/hash`, {
      method: "POST",
      body: { text: "pending" },
      headers: header,
    });
    expect([again.status, again.headers.get("idempotent-replayed"), again.body]).toEqual([
      200,
      "true",
      retry.body,
    ]);
    expect((await setup.gw.services.store.getAccount(accountId))?.balance).toBe(0);
    const purchases = (
      await setup.gw.services.store.ledger(accountId, { limit: 100 })
    ).items.filter((e) => e.kind === "purchase");
    expect(purchases).toHaveLength(1);
  }, 40_000);
});
