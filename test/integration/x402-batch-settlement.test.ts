import { createPublicClient, http, isAddressEqual, type Hex } from "viem";
import { describe, expect, it } from "vitest";
import { MULTICALL3_ADDRESS, randomWallet } from "../../chain-fixtures/chain.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { call } from "../helpers/gateway.js";
import {
  PAY_TO,
  authorizationUsed,
  balanceOf,
  paidGatewayFixture,
  signAuthorization,
  v1Header,
} from "../helpers/x402.js";

/**
 * Batch settlement (X402_BATCH_WINDOW_MS), a group commit: a payment that reaches settlement while
 * no other is being verified is sent at once, alone; one that finds others being verified waits
 * for them (up to the window), and they go on chain together in one Multicall3 aggregate3
 * transaction, each transfer allowed to fail alone. Each payment's outcome is read from its own
 * logs: one that fails inside the batch is that payer's 402, the others are served; a batch that
 * is not mined leaves each payment pending, is replaced at its nonce with higher fees, and each
 * payment is credited once when blocks come again. The tests hold verifications at the RPC (the
 * proxy), so which payments are under way together does not depend on the machine's speed.
 */
const PRICE = 2000n;
const PAYERS = Array.from({ length: 15 }, (_, i) => randomWallet(40_000 + i));
/** Holds exactly one price: its second authorization passes verification and fails in the batch. */
const SHORT = randomWallet(40_100);
/**
 * The most the configuration allows (X402_BATCH_WINDOW_MS ≤ 5 s): long beside anything a send
 * does under load, so a payment sent at once is told from one held for the window by a wide bound.
 */
const WINDOW_MS = 5000;
const setup = paidGatewayFixture({
  fund: PAYERS.map((p) => p.address),
  proxy: true,
  env: {
    X402_BATCH_WINDOW_MS: String(WINDOW_MS),
    X402_RECEIPT_TIMEOUT_MS: "1500",
    // Longer than the receipt budget: a test reads a stuck batch's first transaction before it is replaced.
    X402_STUCK_AFTER_MS: "3000",
  },
});
const rpc = () => createPublicClient({ transport: http(setup.chains.base.rpcUrl) });
const header = async (payer: (typeof PAYERS)[number]) => {
  const payload = await signAuthorization({
    account: payer,
    chain: setup.chains.base,
    value: PRICE,
  });
  return { payload, headers: { "x-payment": v1Header("base-sepolia", payload) } };
};
const pay = (headers: Record<string, string>, text = "batched") =>
  call(`${setup.gw.url}/v1/tools/hash`, { method: "POST", body: { text }, headers });
const transactionOf = (res: { headers: Headers }) =>
  (
    JSON.parse(Buffer.from(res.headers.get("x-payment-response")!, "base64").toString()) as {
      transaction: Hex;
    }
  ).transaction;
const purchases = async (payer: { address: `0x${string}` }) =>
  (
    await setup.gw.services.store.ledger(walletAccountId(payer.address), { limit: 100 })
  ).items.filter((e) => e.kind === "purchase").length;

type Signed = Awaited<ReturnType<typeof header>>;

/** The simulation in a payment's verification names its authorization's nonce. */
const nonceOf = (request: Signed) => request.payload.authorization.nonce.slice(2).toLowerCase();

/**
 * Runs `send` with the verifications it makes held at the RPC until all of `requests` are being
 * verified: each is then under way before any reaches settlement, whatever the machine's speed.
 */
async function verifiedTogether<T>(requests: Signed[], send: () => Promise<T>): Promise<T> {
  const held = setup.proxy.hold((body) => body.includes('"eth_call"'));
  try {
    const sent = send();
    await held.until((bodies) =>
      requests.every((r) => bodies.some((b) => b.toLowerCase().includes(nonceOf(r)))),
    );
    held.release();
    return await sent;
  } finally {
    held.release();
  }
}

describe("batch settlement through Multicall3", () => {
  it("a payment that finds no other payment under way is sent at once, alone, without waiting for the window", async () => {
    const payer = PAYERS[0]!;
    const request = await header(payer);
    setup.proxy.resetCounts();
    const res = await pay(request.headers, "alone");
    expect(res.status).toBe(200);
    const receipt = await rpc().getTransactionReceipt({ hash: transactionOf(res) });
    expect(isAddressEqual(receipt.to!, setup.chains.base.usdc)).toBe(true);
    // The send followed the verification's read at once: nowhere near the window in between (a
    // send held for the window comes WINDOW_MS after it at the least; under load, a send at once
    // has come 1.45 s after it).
    const [verified, send] = [
      setup.proxy.timeline.find((t) => t.methods.includes("eth_call"))!,
      setup.proxy.timeline.find((t) => t.methods[0]!.startsWith("eth_sendRawTransaction"))!,
    ];
    expect(send.at - verified.answeredAt).toBeLessThan(WINDOW_MS / 2);
    expect(await purchases(payer)).toBe(1);
  }, 30_000);

  it("a payment that settles while another is still being verified waits for it: the two go in one transaction", async () => {
    const [verifying, settling] = [PAYERS[13]!, PAYERS[14]!];
    const [first, second] = await Promise.all([header(verifying), header(settling)]);
    // The first payment's chain reads (its simulation names its payer) are held at the RPC.
    const payer = verifying.address.slice(2).toLowerCase();
    const held = setup.proxy.hold((body) => body.toLowerCase().includes(payer));
    try {
      const stillVerifying = pay(first.headers, "verified late");
      await held.until((bodies) => bodies.length > 0);
      const settled = pay(second.headers, "settles first");
      // Its verification answers and it reaches settlement, finding the first still under way; the
      // first's reads go on while it waits (well within the window).
      await new Promise((r) => setTimeout(r, 300));
      held.release();
      const [a, b] = await Promise.all([stillVerifying, settled]);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(transactionOf(a)).toBe(transactionOf(b));
      const receipt = await rpc().getTransactionReceipt({ hash: transactionOf(a) });
      expect(isAddressEqual(receipt.to!, MULTICALL3_ADDRESS)).toBe(true);
      expect([await purchases(verifying), await purchases(settling)]).toEqual([1, 1]);
    } finally {
      held.release();
    }
  }, 30_000);

  it("payments verified together are settled in one Multicall3 transaction, each credited once", async () => {
    const payers = PAYERS.slice(1, 6);
    const before = await balanceOf(setup.chains.base, PAY_TO);
    const requests = await Promise.all(payers.map(header));
    const results = await verifiedTogether(requests, () =>
      Promise.all(requests.map((r) => pay(r.headers))),
    );
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const hashes = new Set(results.map(transactionOf));
    expect(hashes.size).toBe(1);
    const receipt = await rpc().getTransactionReceipt({ hash: [...hashes][0]! });
    expect(isAddressEqual(receipt.to!, MULTICALL3_ADDRESS)).toBe(true);
    expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(before + 5n * PRICE);
    expect(await Promise.all(payers.map(purchases))).toEqual([1, 1, 1, 1, 1]);
  }, 30_000);

  it("one authorization that fails inside the batch: that payer gets 402 with the reason, the others in the batch are served", async () => {
    await setup.chains.base.fund(SHORT.address, PRICE);
    const others = PAYERS.slice(6, 9);
    const before = await balanceOf(setup.chains.base, PAY_TO);
    // Both of SHORT's authorizations pass verification (each alone is covered); only one can be paid.
    const requests = await Promise.all([header(SHORT), header(SHORT), ...others.map(header)]);
    const results = await verifiedTogether(requests, () =>
      Promise.all(requests.map((r, i) => pay(r.headers, `batched ${i}`))),
    );
    const short = results.slice(0, 2);
    expect(short.map((r) => r.status).sort()).toEqual([200, 402]);
    const refused = short.find((r) => r.status === 402)!;
    expect(JSON.stringify(refused.body)).toContain("transfer amount exceeds balance");
    expect(results.slice(2).map((r) => r.status)).toEqual([200, 200, 200]);
    // They shared one transaction, which did not revert.
    const served = results.filter((r) => r.status === 200);
    expect(new Set(served.map(transactionOf)).size).toBe(1);
    // The refused authorization is unused and may be retried once funded; nothing else moved.
    const refusedPayload = requests[short.indexOf(refused)]!.payload;
    expect(
      await authorizationUsed(setup.chains.base, SHORT.address, refusedPayload.authorization.nonce),
    ).toBe(false);
    expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(before + 4n * PRICE);
    expect(await purchases(SHORT)).toBe(1);
    expect(await Promise.all(others.map(purchases))).toEqual([1, 1, 1]);
  }, 30_000);

  it("a batch that is not mined leaves each payment pending, is replaced at its nonce with higher fees, and each payment is credited once when blocks come again", async () => {
    const payers = PAYERS.slice(9, 13);
    const chain = rpc();
    const before = await balanceOf(setup.chains.base, PAY_TO);
    await chain.request({ method: "evm_setAutomine" as never, params: [false] as never });
    const requests = await Promise.all(payers.map(header));
    const first = await verifiedTogether(requests, () =>
      Promise.all(requests.map((r) => pay(r.headers, "stuck batch"))),
    );
    expect(first.map((r) => r.body.error?.code)).toEqual(Array(4).fill("payment_pending"));

    const ids = requests.map((r) =>
      `${setup.chains.base.chainId}:${setup.chains.base.usdc}:${r.payload.authorization.from}:${r.payload.authorization.nonce}`.toLowerCase(),
    );
    const records = () =>
      Promise.all(ids.map(async (id) => (await setup.gw.services.store.getPayment(id))!));
    const sent = await records();
    // One transaction for the four, to Multicall3.
    expect(new Set(sent.map((r) => r.txHash)).size).toBe(1);
    expect(new Set(sent.map((r) => r.relay?.nonce)).size).toBe(1);
    expect(isAddressEqual(sent[0]!.relay!.to as Hex, MULTICALL3_ADDRESS)).toBe(true);

    // The reconciler replaces it once, for all four (same nonce, higher fees).
    const deadline = Date.now() + 10_000;
    let now = sent;
    while (now.some((r) => r.txHash === sent[0]!.txHash) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      now = await records();
    }
    // On failure, what each payment's record says it was sent as.
    const seen = now.map((r) => ({ tx: r.txHash, ...r.relay, data: undefined }));
    expect(new Set(now.map((r) => r.txHash)).size, JSON.stringify(seen)).toBe(1);
    expect(now[0]!.txHash).not.toBe(sent[0]!.txHash);
    expect(now[0]!.relay!.nonce).toBe(sent[0]!.relay!.nonce);
    expect(BigInt(now[0]!.relay!.maxFeePerGas)).toBeGreaterThan(
      BigInt(sent[0]!.relay!.maxFeePerGas),
    );

    await chain.request({ method: "evm_setAutomine" as never, params: [true] as never });
    await chain.request({ method: "evm_mine" as never, params: [] as never });
    const until = Date.now() + 10_000;
    while (Date.now() < until && (await Promise.all(payers.map(purchases))).some((n) => n !== 1))
      await new Promise((r) => setTimeout(r, 100));
    expect(await Promise.all(payers.map(purchases))).toEqual([1, 1, 1, 1]);
    expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(before + 4n * PRICE);
    // The replacement was mined, not the original; each payer's retry is served from its credit.
    expect((await chain.getTransactionReceipt({ hash: now[0]!.txHash as Hex })).status).toBe(
      "success",
    );
    await expect(chain.getTransactionReceipt({ hash: sent[0]!.txHash as Hex })).rejects.toThrow();
    const retried = await Promise.all(requests.map((r) => pay(r.headers, "stuck batch")));
    expect(retried.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(await Promise.all(payers.map(purchases))).toEqual([1, 1, 1, 1]);
  }, 40_000);
});
