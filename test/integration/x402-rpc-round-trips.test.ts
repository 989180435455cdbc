import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anvilAccount } from "../../chain-fixtures/chain.js";
import { call, startGateway, type TestGateway } from "../helpers/gateway.js";
import { startRpcProxy } from "../helpers/rpc-proxy.js";
import { signAuthorization, startChains, v1Header } from "../helpers/x402.js";

/**
 * What a paid call costs in RPC round trips, counted by a loopback JSON-RPC proxy in front of the
 * real chain: the verification's reads (block, authorizationState, balance, the transfer's
 * simulation) travel as one JSON-RPC batch, and the settlement is the send and the receipt — no
 * nonce read, no gas estimate, no fee read.
 */
const PRICE = 2000n;
const PAYERS = [1, 2, 3, 4, 5].map(anvilAccount);
let chains: Awaited<ReturnType<typeof startChains>>;
let proxy: Awaited<ReturnType<typeof startRpcProxy>>;
let gw: TestGateway;
beforeAll(async () => {
  chains = await startChains(PAYERS.map((p) => p.address));
  proxy = await startRpcProxy(chains.base.rpcUrl);
  // Status checks would ask the chain too; they are left for later than this test.
  gw = await startGateway({
    env: { ...chains.env, BASE_SEPOLIA_RPC_URL: proxy.url, STATUS_CHECK_INTERVAL_MS: "600000" },
  });
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  await proxy?.stop();
  await chains?.stop();
});

const pay = async (payer: (typeof PAYERS)[number]) => {
  const header = v1Header(
    "base-sepolia",
    await signAuthorization({ account: payer, chain: chains.base, value: PRICE }),
  );
  return call(`${gw.url}/v1/tools/hash`, {
    method: "POST",
    body: { text: "round trips" },
    headers: { "x-payment": header },
  });
};
/** The round trips the paid call made, without the reconciler's once-a-second look at the relayer's nonce. */
const paidCallTrips = () =>
  proxy.counts.trips.filter((methods) => !methods.every((m) => m === "eth_getTransactionCount"));

describe("a paid call's RPC round trips", () => {
  it("verification is one round trip (one JSON-RPC batch of its four reads); settlement is the send and the receipt", async () => {
    // The first payment starts the relayer's nonce sequence, estimates the token's gas, reads the priority fee.
    expect((await pay(PAYERS[0]!)).status).toBe(200);
    proxy.resetCounts();
    expect((await pay(PAYERS[1]!)).status).toBe(200);
    const trips = paidCallTrips();
    expect(trips[0]!.sort()).toEqual(["eth_call", "eth_call", "eth_call", "eth_getBlockByNumber"]);
    expect(trips.slice(1)).toEqual([["eth_sendRawTransaction"], ["eth_getTransactionReceipt"]]);
  }, 30_000);

  it("a gas estimate that proved too low (the transfer ran out of gas) is estimated again for the next payment, then kept", async () => {
    // The token's cost rose since the estimate (an upgrade, a costlier storage write): the kept estimate no longer covers it.
    const clients = gw.services.payments!.clients.get("base-sepolia")!;
    const relayers = gw.services.payments!.relayers(clients) as unknown as {
      gasByShape: Map<string, Promise<bigint>>;
    };
    for (const shape of relayers.gasByShape.keys())
      relayers.gasByShape.set(shape, Promise.resolve(40_000n));
    proxy.resetCounts();
    const starved = await pay(PAYERS[2]!);
    // Nothing moved: the payer is told so, with the offer to pay again.
    expect(starved.status).toBe(402);
    expect(proxy.counts.methods.eth_estimateGas ?? 0).toBe(0);

    proxy.resetCounts();
    expect((await pay(PAYERS[3]!)).status).toBe(200);
    expect(proxy.counts.methods.eth_estimateGas).toBe(1);

    proxy.resetCounts();
    expect((await pay(PAYERS[4]!)).status).toBe(200);
    expect(proxy.counts.methods.eth_estimateGas ?? 0).toBe(0);
  }, 30_000);
});
