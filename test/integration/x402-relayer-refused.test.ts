import { createPublicClient, http, parseEther, type Address } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anvilAccount, randomWallet } from "../../chain-fixtures/chain.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { call, startGateway, type TestGateway } from "../helpers/gateway.js";
import { relayerKey, signAuthorization, startChains, v1Header } from "../helpers/x402.js";

/**
 * A send the node refuses for the relayer's own reasons (its key has no ETH for gas) is not the
 * payer's fault. Its nonce never reached the node, so it must not stay a hole that the key's
 * next payments wait behind for a whole receipt timeout.
 */
const PRICE = 2000n;
const PAYERS = Array.from({ length: 12 }, (_, i) => randomWallet(41_000 + i));
/** A receipt timeout short enough that a payment stuck behind a hole answers "pending" quickly. */
const RECEIPT_TIMEOUT_MS = "3000";
let chains: Awaited<ReturnType<typeof startChains>>;
const rpc = () => createPublicClient({ transport: http(chains.base.rpcUrl) });
const setBalance = (who: Address, wei: bigint) =>
  rpc().request({
    method: "anvil_setBalance" as never,
    params: [who, `0x${wei.toString(16)}`] as never,
  });
const pay = async (gw: TestGateway, payer: (typeof PAYERS)[number], header?: string) => {
  const x =
    header ??
    v1Header(
      "base-sepolia",
      await signAuthorization({ account: payer, chain: chains.base, value: PRICE }),
    );
  return {
    header: x,
    answer: await call(`${gw.url}/v1/tools/hash`, {
      method: "POST",
      body: { text: "relayer refused" },
      headers: { "x-payment": x },
    }),
  };
};
const purchases = async (gw: TestGateway, payer: (typeof PAYERS)[number]) =>
  (await gw.services.store.ledger(walletAccountId(payer.address), { limit: 100 })).items.filter(
    (e) => e.kind === "purchase",
  ).length;

beforeAll(async () => {
  chains = await startChains(PAYERS.map((p) => p.address));
}, 60_000);
afterAll(async () => {
  await chains?.stop();
});

describe("a relayer key the node refuses (no ETH for gas)", () => {
  const relayer = anvilAccount(9).address;
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      env: {
        ...chains.env,
        X402_RELAYER_PRIVATE_KEY: relayerKey(9),
        X402_RECEIPT_TIMEOUT_MS: RECEIPT_TIMEOUT_MS,
      },
    });
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await setBalance(relayer, parseEther("10000"));
  });

  it("leaves no nonce hole: refilled, the key serves its next payment at once", async () => {
    expect((await pay(gw, PAYERS[0]!)).answer.status).toBe(200); // the key's sequence exists
    await setBalance(relayer, 0n);
    const refused = await pay(gw, PAYERS[1]!);
    expect(refused.answer.status).not.toBe(200);
    await setBalance(relayer, parseEther("10000"));
    const started = Date.now();
    const next = await pay(gw, PAYERS[2]!);
    expect([next.answer.status, next.answer.body.error?.code]).toEqual([200, undefined]);
    expect(Date.now() - started).toBeLessThan(Number(RECEIPT_TIMEOUT_MS));
    expect(await purchases(gw, PAYERS[2]!)).toBe(1);
    // The refused nonce was used by this payment: no filler, no transaction waiting.
    expect(await rpc().getTransactionCount({ address: relayer, blockTag: "pending" })).toBe(
      await rpc().getTransactionCount({ address: relayer, blockTag: "latest" }),
    );
  }, 30_000);
});
