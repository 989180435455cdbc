import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { createPublicClient, createWalletClient, http, type Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anvilAccount } from "../../chain-fixtures/chain.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { call, startGateway, type TestGateway } from "../helpers/gateway.js";
import { dropPrefix, uniquePrefix } from "../helpers/redis.js";
import { RELAYER, signAuthorization, startChains, v1Header } from "../helpers/x402.js";

/**
 * The relayer's nonces come from one sequence in Redis, shared by every process, with no nonce
 * read per send. What keeps that safe: two processes never get the same nonce; a nonce taken and
 * never sent (a hole every later transaction waits behind) is filled; a transaction the node
 * dropped is sent again at its nonce; a sequence behind the chain (the key used elsewhere) is
 * moved up to the chain's count and the payment still settles.
 */
const PRICE = 2000n;
const PAYERS = [1, 2, 3, 4, 5].map(anvilAccount);
let chains: Awaited<ReturnType<typeof startChains>>;
let gw: TestGateway;
const rpc = () => createPublicClient({ transport: http(chains.base.rpcUrl) });
const sequence = async () =>
  `${chains.base.chainId}:${(await rpc().getBlock({ blockNumber: 0n })).hash.slice(2, 18)}:${RELAYER.address.toLowerCase()}`;
const pay = async (payer: (typeof PAYERS)[number]) => {
  const header = {
    "x-payment": v1Header(
      "base-sepolia",
      await signAuthorization({ account: payer, chain: chains.base, value: PRICE }),
    ),
  };
  return {
    header,
    answer: await call(`${gw.url}/v1/tools/hash`, {
      method: "POST",
      body: { text: "nonces" },
      headers: header,
    }),
  };
};
const balance = async (payer: (typeof PAYERS)[number]) =>
  (await gw.services.store.getAccount(walletAccountId(payer.address)))?.balance ?? 0;
const purchases = async (payer: (typeof PAYERS)[number]) =>
  (await gw.services.store.ledger(walletAccountId(payer.address), { limit: 100 })).items.filter(
    (e) => e.kind === "purchase",
  ).length;
async function until(check: () => Promise<boolean>, ms: number) {
  const deadline = Date.now() + ms;
  while (!(await check()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
}

beforeAll(async () => {
  chains = await startChains(PAYERS.map((p) => p.address));
  gw = await startGateway({
    env: { ...chains.env, X402_RECEIPT_TIMEOUT_MS: "800", X402_STUCK_AFTER_MS: "1000" },
  });
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  await chains?.stop();
});

describe("the relayer nonce sequence", () => {
  it("hands out each nonce once across two processes taking them at the same time", async () => {
    const prefix = uniquePrefix("nonceseq");
    const take = () =>
      promisify(execFile)(
        process.execPath,
        [
          "--import",
          "tsx",
          "test/helpers/take-relayer-nonces.ts",
          prefix,
          "84532:0xrelayer",
          "150",
          "40",
        ],
        { cwd: new URL("../..", import.meta.url).pathname },
      );
    try {
      const [a, b] = await Promise.all([take(), take()]);
      const all = [
        ...(JSON.parse(a.stdout) as number[]),
        ...(JSON.parse(b.stdout) as number[]),
      ].sort((x, y) => x - y);
      // 300 distinct nonces, no gap, starting where the chain stood (40).
      expect(all).toEqual(Array.from({ length: 300 }, (_, i) => 40 + i));
    } finally {
      await dropPrefix(prefix);
    }
  }, 60_000);

  it("a nonce taken and never sent is filled, and the payment waiting behind it settles once", async () => {
    expect((await pay(PAYERS[0]!)).answer.status).toBe(200); // the sequence exists from here on
    const hole = (await gw.services.store.takeRelayerNonce(await sequence(), null))!; // a process that died before sending
    const { header, answer } = await pay(PAYERS[1]!);
    // Its transaction waits behind the hole: no receipt in time, so pending, never a 402.
    expect([answer.status, answer.body.error?.code]).toEqual([503, "payment_pending"]);
    await until(async () => (await balance(PAYERS[1]!)) === 1, 15_000);
    expect(await balance(PAYERS[1]!)).toBe(1);
    // The hole holds a zero-value self-transfer from the relayer; the payment's transfer came after it.
    const latest = await rpc().getBlockNumber({ cacheTime: 0 });
    const sent = (await rpc().getTransactionCount({ address: RELAYER.address })) - 1;
    expect(sent).toBe(hole + 1);
    const txs = (
      await Promise.all(
        Array.from({ length: Number(latest) }, (_, i) =>
          rpc().getBlock({ blockNumber: BigInt(i + 1), includeTransactions: true }),
        ),
      )
    ).flatMap((b) => b.transactions);
    const atHole = txs.find(
      (t) => t.from.toLowerCase() === RELAYER.address.toLowerCase() && t.nonce === hole,
    )!;
    expect([atHole.to?.toLowerCase(), atHole.value]).toEqual([RELAYER.address.toLowerCase(), 0n]);
    expect(
      (
        await call(`${gw.url}/v1/tools/hash`, {
          method: "POST",
          body: { text: "nonces" },
          headers: header,
        })
      ).status,
    ).toBe(200);
    expect(await purchases(PAYERS[1]!)).toBe(1);
  }, 40_000);

  it("a transaction the node dropped is sent again at its nonce and credited once", async () => {
    await rpc().request({ method: "evm_setAutomine" as never, params: [false] as never });
    try {
      const { header, answer } = await pay(PAYERS[2]!);
      expect(answer.body.error?.code).toBe("payment_pending");
      const id = (await gw.services.store.openPayments())[0]!.id;
      const dropped = (await gw.services.store.getPayment(id))!;
      await rpc().request({
        method: "anvil_dropTransaction" as never,
        params: [dropped.txHash] as never,
      });
      // The reconciler sends the same transfer again at the same nonce.
      await until(
        async () => (await gw.services.store.getPayment(id))?.txHash !== dropped.txHash,
        10_000,
      );
      const resent = (await gw.services.store.getPayment(id))!;
      expect(resent.txHash).not.toBe(dropped.txHash);
      expect(resent.relay!.nonce).toBe(dropped.relay!.nonce);
      await rpc().request({ method: "evm_setAutomine" as never, params: [true] as never });
      await until(async () => (await balance(PAYERS[2]!)) === 1, 10_000);
      expect(await balance(PAYERS[2]!)).toBe(1);
      expect((await rpc().getTransactionReceipt({ hash: resent.txHash as Hex })).status).toBe(
        "success",
      );
      expect(
        (
          await call(`${gw.url}/v1/tools/hash`, {
            method: "POST",
            body: { text: "nonces" },
            headers: header,
          })
        ).status,
      ).toBe(200);
      expect(await purchases(PAYERS[2]!)).toBe(1);
    } finally {
      await rpc().request({ method: "evm_setAutomine" as never, params: [true] as never });
    }
  }, 40_000);

  it("a sequence behind the chain (the relayer key used elsewhere) is resynchronised and the payment settles", async () => {
    const wallet = createWalletClient({ account: RELAYER, transport: http(chains.base.rpcUrl) });
    const next = (await gw.services.store.peekRelayerNonce(await sequence()))!;
    // Someone else spends the relayer's next two nonces.
    for (let i = 0; i < 2; i++)
      await rpc().waitForTransactionReceipt({
        hash: await wallet.sendTransaction({
          to: RELAYER.address,
          value: 0n,
          nonce: next + i,
          chain: null,
        } as never),
      });
    const { answer } = await pay(PAYERS[3]!);
    expect(answer.status).toBe(200);
    expect(await gw.services.store.peekRelayerNonce(await sequence())).toBe(
      await rpc().getTransactionCount({ address: RELAYER.address }),
    );
    expect(await purchases(PAYERS[3]!)).toBe(1);
  }, 30_000);

  it("a chain started afresh under the same id (the development chain restarted, Redis kept) gets its own sequence: the payment settles at once", async () => {
    expect(await gw.services.store.peekRelayerNonce(await sequence())).toBeGreaterThan(0);
    const fresh = await startChains([PAYERS[4]!.address]);
    const again = await startGateway({
      prefix: gw.prefix,
      env: { ...fresh.env, X402_RECEIPT_TIMEOUT_MS: "800", X402_STUCK_AFTER_MS: "1000" },
    });
    try {
      const answer = await call(`${again.url}/v1/tools/hash`, {
        method: "POST",
        body: { text: "a new chain" },
        headers: {
          "x-payment": v1Header(
            "base-sepolia",
            await signAuthorization({ account: PAYERS[4]!, chain: fresh.base, value: PRICE }),
          ),
        },
      });
      expect(answer.status).toBe(200);
    } finally {
      await again.stop();
      await fresh.stop();
    }
  }, 60_000);
});
