import { createPublicClient, http, toHex, type Hex } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ANVIL_MNEMONIC, randomWallet } from "../../chain-fixtures/chain.js";
import { PERIOD_MS } from "../../src/accounts/tiers.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { tierLimits } from "../../src/store/index.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis.js";
import {
  call,
  dropPrefix,
  spawnGatewayPair,
  uniquePrefix,
  type GatewayProcess,
} from "../helpers/gateway.js";
import { REDIS_URL } from "../helpers/redis.js";
import { PAY_TO, balanceOf, signAuthorization, startChains, v1Header } from "../helpers/x402.js";

/**
 * A chain that makes a block every 2 s, as Base and Polygon do, and 200 payers paying at once
 * through two gateway processes that share a pool of three relayer keys: every payment is
 * settled within 2 blocks of its arrival (no queue behind one nonce), credited once, with no
 * nonce error, and every key of the pool sends its share — each payment in its own transaction,
 * and again with batch settlement, in a few Multicall3 transactions.
 */
const PRICE = 2000n;
const PAYERS = Array.from({ length: 400 }, (_, i) => randomWallet(30_000 + i));
/** anvil accounts 9, 6 and 5 (7 pays in other tests, 8 is paid). */
const RELAYER_KEYS = [9, 6, 5].map((i) =>
  toHex(mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: i }).getHdKey().privateKey!),
);
const RELAYER_ADDRESSES = [9, 6, 5].map(
  (i) => mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: i }).address,
);
const prefix = uniquePrefix("x402pool");
let chains: Awaited<ReturnType<typeof startChains>>;
let store: RedisStore;

beforeAll(async () => {
  chains = await startChains(
    PAYERS.map((p) => p.address),
    { blockTime: 2 },
  );
  store = createRedisStore({
    url: REDIS_URL,
    keyPrefix: prefix,
    tiers: tierLimits(),
    periodMs: PERIOD_MS,
  });
}, 180_000);
afterAll(async () => {
  await store?.close();
  await chains?.stop();
  await dropPrefix(prefix);
});

/** Two gateway processes on one Redis prefix sharing the pool's three keys (and their nonce sequences). */
async function twoGateways(env: Record<string, string> = {}): Promise<GatewayProcess[]> {
  const settings = {
    ...chains.env,
    X402_RELAYER_PRIVATE_KEY: undefined,
    X402_RELAYER_PRIVATE_KEYS: RELAYER_KEYS.join(","),
    ...env,
  };
  return spawnGatewayPair(prefix, settings);
}

/**
 * `payers` pay at once, alternately through `a` and `b`: every one served and credited once,
 * every relayer of the pool used (unless batched), no nonce trouble logged; returns, per
 * payment, how many blocks after its arrival its settlement was mined, and how many
 * transactions settled them all.
 */
async function payAtOnce(
  payers: typeof PAYERS,
  [a, b]: GatewayProcess[],
  { everyRelayer = true } = {},
): Promise<{ blocks: number[]; transactions: number }> {
  const rpc = createPublicClient({ transport: http(chains.base.rpcUrl) });
  const before = await balanceOf(chains.base, PAY_TO);
  const signed = await Promise.all(
    payers.map((w) => signAuthorization({ account: w, chain: chains.base, value: PRICE })),
  );
  const headers = signed.map((payload) => v1Header("base-sepolia", payload));
  const results = await Promise.all(
    headers.map((h, i) =>
      call(`${(i % 2 ? a! : b!).url}/v1/tools/hash`, {
        method: "POST",
        body: { text: `payer ${i}` },
        headers: { "x-payment": h },
      }),
    ),
  );
  expect(results.filter((r) => r.status !== 200).map((r) => [r.status, r.body])).toEqual([]);
  const hashes = results.map(
    (r) =>
      (
        JSON.parse(Buffer.from(r.headers.get("x-payment-response")!, "base64").toString()) as {
          transaction: Hex;
        }
      ).transaction,
  );
  const receipts = await Promise.all(
    [...new Set(hashes)].map((hash) => rpc.getTransactionReceipt({ hash })),
  );
  expect(receipts.every((r) => r.status === "success")).toBe(true);
  // Each key of the pool sent some of them (one transaction a payment; a handful of batches may
  // all come from two of the three keys).
  const senders = new Set(receipts.map((r) => r.from.toLowerCase()));
  const pool = RELAYER_ADDRESSES.map((x) => x.toLowerCase());
  if (everyRelayer) expect([...senders].sort()).toEqual(pool.sort());
  else expect([...senders].filter((s) => !pool.includes(s))).toEqual([]);
  // Paid once on chain, credited once in the books.
  expect(await balanceOf(chains.base, PAY_TO)).toBe(before + BigInt(payers.length) * PRICE);
  const purchases = await Promise.all(
    payers.map(
      async (w) =>
        (await store.ledger(walletAccountId(w.address), { limit: 100 })).items.filter(
          (e) => e.kind === "purchase",
        ).length,
    ),
  );
  expect(purchases.filter((n) => n !== 1)).toEqual([]);
  // No relayer nonce trouble anywhere: no resync, no gap filled, no nonce refused.
  const nonceTrouble = [...a!.output, ...b!.output].filter(
    (line) => /nonce/i.test(line) && (JSON.parse(line) as { level: number }).level >= 40,
  );
  expect(nonceTrouble).toEqual([]);
  // Each payment's arrival: the block the gateway read when it took the payment up (its record's
  // `sentFromBlock`), so a test machine slow to send 200 requests does not count against the chain.
  const minedIn = new Map(receipts.map((r) => [r.transactionHash.toLowerCase(), r.blockNumber]));
  const blocks = await Promise.all(
    payers.map(async (w, i) => {
      const id =
        `${chains.base.chainId}:${chains.base.usdc}:${w.address}:${signed[i]!.authorization.nonce}`.toLowerCase();
      const record = await store.getPayment(id);
      return Number(minedIn.get(hashes[i]!.toLowerCase())! - BigInt(record!.sentFromBlock!));
    }),
  );
  return { blocks, transactions: receipts.length };
}

describe("a relayer pool under interval mining (a block every 2 s)", () => {
  it("200 payers paying at once through two processes are all settled within 2 blocks of their arrival, each credited once, by every relayer, with no nonce error", async () => {
    // The pool alone: each payment its own transaction.
    const gateways = await twoGateways({ X402_BATCH_WINDOW_MS: "0" });
    try {
      const { blocks } = await payAtOnce(PAYERS.slice(0, 200), gateways);
      expect(blocks.filter((n) => n > 2)).toEqual([]);
    } finally {
      await Promise.all(gateways.map((g) => g.stop()));
    }
  }, 180_000);

  it("with batch settlement too: 200 payers at once are settled within 2 blocks of their arrival in a few Multicall3 transactions, each credited once", async () => {
    const gateways = await twoGateways({ X402_BATCH_WINDOW_MS: "50" });
    try {
      const { blocks, transactions } = await payAtOnce(PAYERS.slice(200, 400), gateways, {
        everyRelayer: false,
      });
      expect(transactions).toBeLessThan(100); // one transaction per batch, not per payment
      expect(blocks.filter((n) => n > 2)).toEqual([]);
    } finally {
      await Promise.all(gateways.map((g) => g.stop()));
    }
  }, 180_000);
});
