import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { anvilAccount } from "../../chain-fixtures/chain.js";
import { call, startGateway, type TestGateway } from "../helpers/gateway.js";
import { startHandMiner } from "../helpers/hand-miner.js";
import { startRpcProxy } from "../helpers/rpc-proxy.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import {
  authorizationUsed,
  balanceOf,
  ledgerKinds,
  relayerKey,
  signAuthorization,
  startChains,
  v1Header,
} from "../helpers/x402.js";

/**
 * What a paid call costs in RPC round trips, counted by a loopback JSON-RPC proxy in front of the
 * real chain: the verification's reads (the block and the transfer's simulation) travel as one
 * JSON-RPC batch, and the settlement is one send answered with its
 * receipt (EIP-7966 eth_sendRawTransactionSync; anvil has it) — no nonce read, no gas estimate,
 * no fee read. An RPC without the sync send gets a send and a receipt read instead.
 */
const PRICE = 2000n;
// Anvil's spare accounts 1-4 and twenty-one new wallets (anvil 5, 6 and 7 relay for the second gateways below).
const PAYERS = [
  ...[1, 2, 3, 4].map(anvilAccount),
  ...Array.from({ length: 21 }, () => privateKeyToAccount(generatePrivateKey())),
];
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

const pay = async (payer: (typeof PAYERS)[number], through = gw) => {
  const header = v1Header(
    "base-sepolia",
    await signAuthorization({ account: payer, chain: chains.base, value: PRICE }),
  );
  return call(`${through.url}/v1/tools/hash`, {
    method: "POST",
    body: { text: "round trips" },
    headers: { "x-payment": header },
  });
};
/** How many times a payer's wallet account was credited and charged. */
const purchasesAndDebits = async (through: TestGateway, payer: (typeof PAYERS)[number]) => {
  const kinds = (await ledgerKinds(through.services.store, walletAccountId(payer.address))).map(
    ([kind]) => kind,
  );
  return [kinds.filter((k) => k === "purchase").length, kinds.filter((k) => k === "debit").length];
};
/** The round trips that sent a settlement or asked the node whether it has one, in order. */
const settlingTrips = (rpc: Awaited<ReturnType<typeof startRpcProxy>>) =>
  rpc.counts.trips.filter((m) =>
    m.some((x) => x.startsWith("eth_send") || x === "eth_getTransactionByHash"),
  );
/** The round trips the paid call made, without the reconciler's look at the relayer's nonce (each second, while a nonce taken is not yet seen mined). */
const paidCallTrips = () =>
  proxy.counts.trips.filter((methods) => !methods.every((m) => m === "eth_getTransactionCount"));

describe("a paid call's RPC round trips", () => {
  it("verification is one round trip (one JSON-RPC batch: the block and the transfer's simulation); settlement is one send answered with its receipt", async () => {
    // The first payment starts the relayer's nonce sequence, estimates the token's gas, reads the priority fee.
    expect((await pay(PAYERS[0]!)).status).toBe(200);
    proxy.resetCounts();
    expect((await pay(PAYERS[1]!)).status).toBe(200);
    const trips = paidCallTrips();
    expect(trips[0]!.sort()).toEqual(["eth_call", "eth_getBlockByNumber"]);
    expect(trips.slice(1)).toEqual([["eth_sendRawTransactionSync"]]);
  }, 30_000);

  it("a payment the chain refuses costs a second round trip, which reads the token's state to name the refusal", async () => {
    const penniless = privateKeyToAccount(generatePrivateKey());
    proxy.resetCounts();
    const res = await pay(penniless);
    expect([res.status, res.body.error.code, res.body.error.reason]).toEqual([
      402,
      "payment_invalid",
      "the payer's balance is too low",
    ]);
    const trips = paidCallTrips();
    expect(trips.map((methods) => [...methods].sort())).toEqual([
      ["eth_call", "eth_getBlockByNumber"],
      ["eth_call", "eth_call"],
    ]);
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

describe("an idle gateway", () => {
  it("stops asking the chain for its relayer's nonce once the chain has mined every nonce it took", async () => {
    expect((await pay(PAYERS[24]!)).status).toBe(200);
    // The reconciler (once a second) sees the chain caught up with the relayer's sequence: its
    // last question may land a while after the payment on a loaded machine, so wait for a quiet
    // pass or so...
    for (const deadline = Date.now() + 15_000; ; ) {
      proxy.resetCounts();
      await new Promise((r) => setTimeout(r, 1_500));
      if (Object.keys(proxy.counts.methods).length === 0 || Date.now() > deadline) break;
    }
    proxy.resetCounts();
    // ...and from then on, while no payment takes a nonce, asks the chain nothing.
    await new Promise((r) => setTimeout(r, 3_500));
    expect(proxy.counts.methods).toEqual({});
  }, 30_000);
});

/**
 * Runs `test` against a second gateway (its own relayer key, so the two nonce sequences never
 * meet) on its own proxy with `options`; both are stopped after.
 */
async function behindProxy(
  options: Parameters<typeof startRpcProxy>[1],
  relayerIndex: number,
  env: Record<string, string>,
  test: (behind: {
    proxy: Awaited<ReturnType<typeof startRpcProxy>>;
    gw: TestGateway;
  }) => Promise<void>,
) {
  const proxy = await startRpcProxy(chains.base.rpcUrl, options);
  const gw = await startGateway({
    env: {
      ...chains.env,
      BASE_SEPOLIA_RPC_URL: proxy.url,
      X402_RELAYER_PRIVATE_KEY: relayerKey(relayerIndex),
      STATUS_CHECK_INTERVAL_MS: "600000",
      ...env,
    },
  });
  try {
    await test({ proxy, gw });
  } finally {
    await gw.stop();
    await proxy.stop();
  }
}

describe("an RPC without eth_sendRawTransactionSync", () => {
  it("is asked once; that payment and every later one are sent, then their receipts read", async () => {
    await behindProxy({ withoutMethods: ["eth_sendRawTransactionSync"] }, 7, {}, async (behind) => {
      const first = await pay(PAYERS[5]!, behind.gw);
      expect(first.status).toBe(200);
      const firstTrips = behind.proxy.counts.trips.filter((m) =>
        m.some((x) => x.startsWith("eth_send")),
      );
      expect(firstTrips).toEqual([["eth_sendRawTransactionSync"], ["eth_sendRawTransaction"]]);
      behind.proxy.resetCounts();
      expect((await pay(PAYERS[6]!, behind.gw)).status).toBe(200);
      // After its verification: one plain send, never the sync send again, then its receipt read
      // (read again if the node had not mined it yet: seen on a loaded CI machine).
      const [send, ...reads] = behind.proxy.counts.trips
        .filter((m) => !m.every((x) => x === "eth_getTransactionCount"))
        .slice(1);
      expect(send).toEqual(["eth_sendRawTransaction"]);
      expect(reads.length).toBeGreaterThanOrEqual(1);
      expect(reads.every((m) => m.length === 1 && m[0] === "eth_getTransactionReceipt")).toBe(true);
    });
  }, 60_000);
});

describe("X402_SEND_SYNC=0", () => {
  it("never asks for the sync send: each settlement is sent, then its receipt read", async () => {
    await behindProxy({}, 5, { X402_SEND_SYNC: "0" }, async (behind) => {
      expect((await pay(PAYERS[7]!, behind.gw)).status).toBe(200);
      expect(behind.proxy.counts.methods.eth_sendRawTransactionSync ?? 0).toBe(0);
      expect(behind.proxy.counts.methods.eth_sendRawTransaction).toBe(1);
    });
  }, 60_000);
});

describe("X402_SEND_SYNC=1: one send at a time waits for its block", () => {
  it("sends the settlements that come while one waits plainly, then reads their receipts", async () => {
    // 150 ms away: the three settlements are sent while the first one is still waiting.
    // Each payment its own transaction (batch settlement would gather the two that wait).
    const env = { X402_SEND_SYNC: "1", X402_BATCH_WINDOW_MS: "0" };
    await behindProxy({ delayMs: 150 }, 5, env, async (behind) => {
      const answers = await Promise.all(PAYERS.slice(9, 12).map((p) => pay(p, behind.gw)));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
      const { methods } = behind.proxy.counts;
      expect(methods.eth_sendRawTransactionSync).toBe(1);
      expect(methods.eth_sendRawTransaction).toBe(2);
    });
  }, 60_000);
});

describe("a node that mined the transaction but never answers its sync send", () => {
  it("is not waited for: the receipt is read after one polling interval and the payer is served", async () => {
    await behindProxy({ syncHangs: true }, 7, { X402_POLL_MS: "100" }, async (behind) => {
      const started = performance.now();
      const res = await pay(PAYERS[12]!, behind.gw);
      expect(res.status).toBe(200);
      // Well within the receipt timeout (30 s), the one anvil itself would wait.
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(behind.proxy.counts.methods.eth_getTransactionReceipt).toBeGreaterThanOrEqual(1);
    });
  }, 60_000);
});

describe("a node whose sync send answers before the block (EIP-7966's timeout error)", () => {
  it("is not taken for a refusal: the transaction is in the node's pool, its receipt is read, and the payer is served and charged once", async () => {
    const payer = PAYERS[8]!;
    await behindProxy({ syncWaitRunsOut: true }, 6, {}, async (behind) => {
      const before = await balanceOf(chains.base, payer.address);
      const payment = await signAuthorization({ account: payer, chain: chains.base, value: PRICE });
      const res = await call(`${behind.gw.url}/v1/tools/hash`, {
        method: "POST",
        body: { text: "ran out" },
        headers: { "x-payment": v1Header("base-sepolia", payment) },
      });
      expect(res.status).toBe(200);
      expect(res.body.algorithm).toBe("sha256");
      expect(await authorizationUsed(chains.base, payer.address, payment.authorization.nonce)).toBe(
        true,
      );
      expect(await balanceOf(chains.base, payer.address)).toBe(before - PRICE);
      // Credited once, spent once by the call it paid for.
      expect(await purchasesAndDebits(behind.gw, payer)).toEqual([1, 1]);
      expect(settlingTrips(behind.proxy)).toEqual([
        ["eth_sendRawTransactionSync"],
        ["eth_getTransactionByHash"],
      ]);
    });
  }, 60_000);
});

describe("a send whose connection breaks before the node has it", () => {
  it("is delivered again at once: its payer and the next are served and charged once, with no nonce left empty", async () => {
    await behindProxy({}, 5, {}, async (behind) => {
      behind.proxy.breakNextSend();
      const first = await pay(PAYERS[13]!, behind.gw);
      // Asked whether the node has it (no), then the same bytes sent again.
      expect(settlingTrips(behind.proxy)).toEqual([
        ["eth_getTransactionByHash"],
        ["eth_sendRawTransaction"],
      ]);
      behind.proxy.resetCounts();
      // The next settlement takes the next nonce: a hole before it would hold it in the node's pool.
      const second = await pay(PAYERS[14]!, behind.gw);
      expect(settlingTrips(behind.proxy)).toEqual([["eth_sendRawTransactionSync"]]);
      expect([first.status, second.status]).toEqual([200, 200]);
      for (const payer of [PAYERS[13]!, PAYERS[14]!])
        expect(await purchasesAndDebits(behind.gw, payer)).toEqual([1, 1]);
    });
  }, 60_000);
});

describe("a chain with real block times (blocks mined 300 ms after a transaction arrives)", () => {
  it("reads a settlement's receipt once at once and once after its block, once quick looks have stopped finding receipts", async () => {
    // Plain sends, so each settlement waits for its receipt (a sync send gets it with its answer);
    // each payment its own transaction, so eight settlements learn.
    const env = { X402_SEND_SYNC: "0", X402_POLL_MS: "50", X402_BATCH_WINDOW_MS: "0" };
    await behindProxy({}, 6, env, async (behind) => {
      const miner = await startHandMiner(chains.base.rpcUrl, 300);
      try {
        const receiptReads = () => behind.proxy.counts.methods.eth_getTransactionReceipt ?? 0;
        // Eight settlements look quickly (2 to 40 ms after the send) and find nothing: the block comes later.
        const first = await Promise.all(PAYERS.slice(15, 23).map((p) => pay(p, behind.gw)));
        expect(first.map((r) => r.status)).toEqual(Array(8).fill(200));
        expect(receiptReads()).toBeGreaterThanOrEqual(8 * 6);

        behind.proxy.resetCounts();
        const next = await pay(PAYERS[23]!, behind.gw);
        expect(next.status).toBe(200);
        // At once, then after its block; meanwhile only the chain's head is read.
        expect(receiptReads()).toBe(2);
        expect(await purchasesAndDebits(behind.gw, PAYERS[23]!)).toEqual([1, 1]);
      } finally {
        await miner.stop();
      }
    });
  }, 60_000);
});
