import { createPublicClient, http, parseEther, type Address } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anvilAccount, randomWallet } from "../../chain-fixtures/chain.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { call, startGateway, type TestGateway } from "../helpers/gateway.js";
import {
  PAY_TO,
  balanceOf,
  relayerKey,
  signAuthorization,
  startChains,
  v1Header,
} from "../helpers/x402.js";

/**
 * A send the node refuses for the relayer's own reasons (its key has no ETH for gas) is not the
 * payer's fault: another key of the pool sends it, and when none can, the answer is 503
 * chain_unavailable, nothing charged, the same payment taken again later. Its nonce never reached
 * the node, so it must not stay a hole that the key's next payments wait behind for a whole
 * receipt timeout.
 */
const PRICE = 2000n;
const PAYERS = Array.from({ length: 14 }, (_, i) => randomWallet(41_000 + i));
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

  it("fees below a spiked base fee: sent again from the same key at the chain's current fees, and served", async () => {
    const payer = PAYERS[10]!;
    const block = await rpc().getBlock();
    await rpc().request({
      method: "anvil_setNextBlockBaseFeePerGas" as never,
      params: [`0x${(block.baseFeePerGas! * 1000n + 1_000_000_000n).toString(16)}`] as never,
    });
    const { answer } = await pay(gw, payer);
    expect([answer.status, answer.body.error?.code]).toEqual([200, undefined]);
    expect(await purchases(gw, payer)).toBe(1);
  }, 60_000);
});

describe("a relayer pool with keys the node refuses (no ETH for gas)", () => {
  const keys = [6, 5];
  const relayers = keys.map((i) => anvilAccount(i).address);
  let gw: TestGateway;
  beforeAll(async () => {
    const { X402_RELAYER_PRIVATE_KEY: _single, ...env } = chains.env;
    gw = await startGateway({
      env: {
        ...env,
        X402_RELAYER_PRIVATE_KEYS: keys.map((i) => relayerKey(i)).join(","),
        X402_RECEIPT_TIMEOUT_MS: RECEIPT_TIMEOUT_MS,
      },
    });
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    for (const r of relayers) await setBalance(r, parseEther("10000"));
  });

  it("one key unfunded: every payer is served by the other key and credited once", async () => {
    await setBalance(relayers[0]!, 0n);
    const payers = PAYERS.slice(3, 9);
    const before = await balanceOf(chains.base, PAY_TO);
    const answers = [];
    for (const p of payers) answers.push((await pay(gw, p)).answer);
    expect(answers.map((a) => [a.status, a.body.error?.code])).toEqual(
      payers.map(() => [200, undefined]),
    );
    expect(await balanceOf(chains.base, PAY_TO)).toBe(before + BigInt(payers.length) * PRICE);
    for (const p of payers) expect(await purchases(gw, p)).toBe(1);
    await setBalance(relayers[0]!, parseEther("10000"));
  }, 60_000);

  it("every key unfunded: 503 chain_unavailable with Retry-After, nothing charged; refilled, the same payment settles once", async () => {
    for (const r of relayers) await setBalance(r, 0n);
    const payer = PAYERS[9]!;
    const before = await balanceOf(chains.base, PAY_TO);
    const refused = await pay(gw, payer);
    expect([refused.answer.status, refused.answer.body.error?.code]).toEqual([
      503,
      "chain_unavailable",
    ]);
    expect(Number(refused.answer.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(before);
    expect(await purchases(gw, payer)).toBe(0);
    expect(await gw.services.store.openPayments()).toEqual([]);
    for (const r of relayers) await setBalance(r, parseEther("10000"));
    const again = await pay(gw, payer, refused.header);
    expect([again.answer.status, again.answer.body.error?.code]).toEqual([200, undefined]);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(before + PRICE);
    expect(await purchases(gw, payer)).toBe(1);
  }, 60_000);
});

describe("nonce holes left while a relayer key had no ETH", () => {
  const relayer = anvilAccount(7).address;
  /** Long enough for a payment behind the holes to be served once they are filled; short enough that one stuck cycle per hole (receipt timeout + stuck period) is not. */
  const RECEIPT_MS = 6_000;
  const STUCK_MS = 1_000;
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      env: {
        ...chains.env,
        X402_RELAYER_PRIVATE_KEY: relayerKey(7),
        X402_RECEIPT_TIMEOUT_MS: String(RECEIPT_MS),
        X402_STUCK_AFTER_MS: String(STUCK_MS),
      },
    });
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await setBalance(relayer, parseEther("10000"));
  });

  it("are all filled once the key is refunded, and the next paid call is served within seconds", async () => {
    const before = await balanceOf(chains.base, PAY_TO);
    expect((await pay(gw, PAYERS[11]!)).answer.status).toBe(200); // the key's sequence exists
    const sequence = `${chains.base.chainId}:${(await rpc().getBlock({ blockNumber: 0n })).hash.slice(2, 18)}:${relayer.toLowerCase()}`;
    const mined = await rpc().getTransactionCount({ address: relayer, blockTag: "latest" });
    await setBalance(relayer, 0n);
    // Three nonces taken and never sent (processes that died before sending): holes.
    for (let i = 0; i < 3; i++) await gw.services.store.takeRelayerNonce(sequence, null);
    // Judged holes (a stuck cycle), their fillers refused: the key has no ETH.
    await new Promise((r) => setTimeout(r, RECEIPT_MS + STUCK_MS + 2_500));
    expect(await rpc().getTransactionCount({ address: relayer, blockTag: "pending" })).toBe(mined);
    await setBalance(relayer, parseEther("10000"));
    const started = Date.now();
    const { answer } = await pay(gw, PAYERS[12]!);
    expect([answer.status, answer.body.error?.code]).toEqual([200, undefined]);
    expect(Date.now() - started).toBeLessThan(RECEIPT_MS);
    // Every hole holds a filler, and nothing waits behind one.
    expect(await rpc().getTransactionCount({ address: relayer, blockTag: "latest" })).toBe(
      mined + 4,
    );
    expect(await rpc().getTransactionCount({ address: relayer, blockTag: "pending" })).toBe(
      mined + 4,
    );
    const next = await pay(gw, PAYERS[13]!);
    expect([next.answer.status, next.answer.body.error?.code]).toEqual([200, undefined]);
    // The books: one credit per payment, and exactly that much reached payTo.
    for (const p of PAYERS.slice(11, 14)) expect(await purchases(gw, p)).toBe(1);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(before + 3n * PRICE);
  }, 60_000);
});
