import { describe, expect, it } from "vitest";
import { anvilAccount } from "../../chain-fixtures/chain.js";
import { call } from "../helpers/gateway.js";
import { paidGatewayFixture, signAuthorization, useOnChain, v1Header } from "../helpers/x402.js";

/**
 * An authorization already used on chain that the gateway has no record of (used directly on
 * chain, or settled longer ago than X402_PAYMENT_RETENTION_SECONDS) is answered 409
 * payment_already_used only once the chain has been asked (the simulation, then whether it is
 * used and the payer's balance): a refusal that costs RPC calls, so it is counted against the
 * keyless caller's address (`x402-refused`, 60 a minute) like a 402 payment_invalid.
 */
const PRICE = 2000n;
const PAYER = anvilAccount(3);
const setup = paidGatewayFixture({
  fund: [PAYER.address],
  proxy: true,
  // Behind a proxy on loopback: the test names its own client address (X-Forwarded-For). Status
  // checks would ask the chain too: they are left for later than this test.
  env: { TRUST_PROXY: "loopback", STATUS_CHECK_INTERVAL_MS: "600000" },
});

describe("an authorization used on chain, sent again and again from one address", () => {
  it("is refused 409 up to the limit; past it, 429 without asking the chain", async () => {
    const payload = await signAuthorization({
      account: PAYER,
      chain: setup.chains.base,
      value: PRICE,
    });
    await useOnChain(setup.chains.base, payload);
    const client = `10.63.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`;
    const send = (from = client) =>
      call(`${setup.gw.url}/v1/tools/hash`, {
        method: "POST",
        body: { text: "used" },
        headers: { "x-payment": v1Header("base-sepolia", payload), "x-forwarded-for": from },
      });
    setup.proxy.resetCounts();
    const refusals = [];
    for (let i = 0; i < 60; i += 10)
      refusals.push(...(await Promise.all(Array.from({ length: 10 }, () => send()))));
    expect(new Set(refusals.map((r) => `${r.status} ${r.body.error.code}`))).toEqual(
      new Set(["409 payment_already_used"]),
    );
    expect(setup.proxy.counts.methods.eth_call ?? 0).toBeGreaterThanOrEqual(60);
    // Each counted by the limit on refused payments, which the answers show: the ten of a batch
    // are counted in whatever order they reach the store, so it is the answers together that
    // count down from 59 to 0, each once.
    expect(new Set(refusals.map((r) => r.headers.get("ratelimit-policy")))).toEqual(
      new Set(["60;w=60"]),
    );
    const remaining = refusals.map((r) => Number(r.headers.get("ratelimit-remaining")));
    expect(remaining.sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, i) => i));

    setup.proxy.resetCounts();
    const limited = await send();
    expect([limited.status, limited.body.error.code]).toEqual([429, "rate_limited"]);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(setup.proxy.counts.methods).toEqual({});
    // The limit is the address's: another one is still told why.
    const other = await send("10.64.0.1");
    expect([other.status, other.body.error.code]).toEqual([409, "payment_already_used"]);
  }, 60_000);
});
