import { createPublicClient, createWalletClient, http, type PublicClient } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anvilAccount, startLocalChain, type LocalChain } from "../../chain-fixtures/chain.js";
import { startHandMiner, type HandMiner } from "../helpers/hand-miner.js";
import {
  QUICK_LOOK_MEMORY,
  QUICK_LOOK_PROBE_EVERY,
  ReceiptWaiter,
} from "../../src/payments/receipt-wait.js";

/**
 * The settlement receipt wait on a real anvil whose blocks are mined by hand, a set time after a
 * transaction arrives: quick looks stop on a chain where they find nothing (a block comes later),
 * and come back once the chain mines within their span again (30 ms), found by one wait in
 * QUICK_LOOK_PROBE_EVERY trying them.
 */
const POLL_MS = 200;
let chain: LocalChain;
let client: PublicClient;
const sender = anvilAccount(3);
let miner: HandMiner;

beforeAll(async () => {
  chain = await startLocalChain({ chainId: 31337, usdcName: "USDC", usdcVersion: "2" });
  client = createPublicClient({
    transport: http(chain.rpcUrl, {
      onFetchRequest: async (request) => {
        const body = (await request.clone().json()) as { method: string };
        if (body.method === "eth_getTransactionReceipt") receiptReads++;
      },
    }),
    pollingInterval: POLL_MS,
  }) as PublicClient;
  miner = await startHandMiner(chain.rpcUrl, 300);
}, 60_000);
afterAll(async () => {
  await miner?.stop();
  await chain?.stop();
});

const wallet = () => createWalletClient({ account: sender, transport: http(chain.rpcUrl) });

/** How many receipt reads the client made (all tests share one counting client). */
let receiptReads = 0;

/** Sends a transfer and waits for its receipt: how long the wait took (ms) and how many receipt reads it made. */
async function sendAndWait(waiter: ReceiptWaiter): Promise<{ ms: number; reads: number }> {
  const afterBlock = await client.getBlockNumber({ cacheTime: 0 });
  const hash = await wallet().sendTransaction({
    chain: null,
    to: anvilAccount(4).address,
    value: 1n,
  });
  const readsBefore = receiptReads;
  const started = performance.now();
  const receipt = await waiter.wait(hash, { receiptTimeoutMs: 10_000, afterBlock });
  expect(receipt.transactionHash).toBe(hash);
  return { ms: performance.now() - started, reads: receiptReads - readsBefore };
}

describe("the settlement receipt wait", () => {
  it("stops looking quickly where blocks come later, and looks quickly again once they come within its span", async () => {
    const waiter = new ReceiptWaiter(client);
    // Blocks 300 ms after arrival: the quick looks (2 to 40 ms) find nothing.
    miner.afterMs = 300;
    for (let i = 0; i < QUICK_LOOK_MEMORY; i++) await sendAndWait(waiter);

    // Blocks 30 ms after arrival: within the quick looks' span. A wait that skips them reads the
    // receipt at once and then block by block (at the next poll, 200 ms); one that makes them
    // finds it in tens of ms.
    miner.afterMs = 30;
    const waits: { ms: number; reads: number }[] = [];
    const quick = (w: { ms: number }) => w.ms < POLL_MS;
    for (let i = 0; i < 2 * QUICK_LOOK_PROBE_EVERY + 3; i++) {
      waits.push(await sendAndWait(waiter));
      if (waits.length > QUICK_LOOK_PROBE_EVERY + 3 && waits.slice(-3).every(quick)) break;
    }
    // The first wait makes no quick looks: a read at once (which a loaded machine may make late
    // enough to find the receipt) and, if that found nothing, one once its block is there.
    expect(waits[0]?.reads).toBeLessThanOrEqual(2);
    // One wait in QUICK_LOOK_PROBE_EVERY tries them (two chances here, for a loaded machine); once
    // one finds its receipt so, every later wait finds it before a polling interval.
    expect(waits.slice(-3).every(quick)).toBe(true);
  }, 60_000);

  it("reads the receipt only once the head has passed the block it was sent after", async () => {
    const reads: string[] = [];
    const counting = createPublicClient({
      transport: http(chain.rpcUrl, {
        onFetchRequest: async (request) => {
          const body = (await request.clone().json()) as { method: string };
          reads.push(body.method);
        },
      }),
      pollingInterval: 50,
    }) as PublicClient;
    miner.afterMs = 400;
    const afterBlock = await client.getBlockNumber({ cacheTime: 0 });
    const hash = await wallet().sendTransaction({
      chain: null,
      to: anvilAccount(4).address,
      value: 1n,
    });
    await new ReceiptWaiter(counting).wait(hash, {
      receiptTimeoutMs: 10_000,
      afterBlock,
      from: "block",
    });
    // Block by block, the head is polled every 50 ms for 400 ms; the receipt is read once, when its block is there.
    expect(reads.filter((m) => m === "eth_getTransactionReceipt")).toHaveLength(1);
    expect(reads.filter((m) => m === "eth_blockNumber").length).toBeGreaterThanOrEqual(4);
  }, 30_000);
});
