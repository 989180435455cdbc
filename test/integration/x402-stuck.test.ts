import { createPublicClient, http, type Hex } from "viem";
import { afterEach, describe, expect, it } from "vitest";
import { anvilAccount, randomWallet } from "../../chain-fixtures/chain.js";
import { REPLACEMENT_FEE_CAP } from "../../src/payments/replacement-fees.js";
import type { PaymentRecord } from "../../src/store/types.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { call } from "../helpers/gateway.js";
import {
  PAY_TO,
  RELAYER,
  balanceOf,
  paidGatewayFixture,
  signAuthorization,
  v1Header,
} from "../helpers/x402.js";

/**
 * A settlement transaction that sits unmined (here: the chain stops mining) at the relayer's lowest
 * unmined nonce is replaced at that nonce with higher fees, so one stuck transaction does not hold
 * up the relayer for good; those above it wait behind it, unreplaced, and the replacements' fees
 * stay under a cap tied to the chain's current fees. When blocks come again, each payment is
 * credited once, from whichever transaction was mined.
 */
const PRICE = 2000n;
const PAYERS = [anvilAccount(1), anvilAccount(2)];
/** Payers of the later tests, each paying once. */
const QUEUED = Array.from({ length: 3 }, (_, i) => randomWallet(52_000 + i));
const CAPPED = randomWallet(52_100);
const setup = paidGatewayFixture({
  fund: [...PAYERS, ...QUEUED, CAPPED].map((p) => p.address),
  env: { X402_RECEIPT_TIMEOUT_MS: "800", X402_STUCK_AFTER_MS: "1000" },
});

// A test that fails with mining stopped must not leave the chain stopped under the next one.
afterEach(async () => {
  const rpc = createPublicClient({ transport: http(setup.chains.base.rpcUrl) });
  await rpc.request({ method: "evm_setAutomine" as never, params: [true] as never });
});

describe("a stuck settlement transaction", () => {
  it("is replaced with higher fees, and every payment is credited once when blocks come again", async () => {
    const rpc = createPublicClient({ transport: http(setup.chains.base.rpcUrl) });
    const payToBefore = await balanceOf(setup.chains.base, PAY_TO);
    await rpc.request({ method: "evm_setAutomine" as never, params: [false] as never });
    const payloads = await Promise.all(
      PAYERS.map((p) => signAuthorization({ account: p, chain: setup.chains.base, value: PRICE })),
    );
    const headers = payloads.map((p) => ({ "x-payment": v1Header("base-sepolia", p) }));
    const first = await Promise.all(
      headers.map((h) =>
        call(`${setup.gw.url}/v1/tools/hash`, {
          method: "POST",
          body: { text: "stuck" },
          headers: h,
        }),
      ),
    );
    expect(first.map((r) => r.body.error?.code)).toEqual(["payment_pending", "payment_pending"]);

    const ids = payloads.map((p) =>
      `${setup.chains.base.chainId}:${setup.chains.base.usdc}:${p.authorization.from}:${p.authorization.nonce}`.toLowerCase(),
    );
    const sent = await Promise.all(
      ids.map(async (id) => (await setup.gw.services.store.getPayment(id))!),
    );
    expect(sent.map((r) => r.relay?.nonce)).toEqual(
      expect.arrayContaining([expect.any(Number), expect.any(Number)]),
    );
    // The reconciler replaces the transaction at the lowest nonce (same nonce, higher fees); one
    // above it waits behind it and is left as it is. Both payments may share one transaction
    // (settled in one batch when they arrive together): then both are replaced.
    const lowestNonce = Math.min(...sent.map((x) => x.relay!.nonce));
    const lowest = sent.findIndex((r) => r.relay!.nonce === lowestNonce);
    const deadline = Date.now() + 10_000;
    let now = sent;
    while (now[lowest]!.txHash === sent[lowest]!.txHash && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      now = await Promise.all(
        ids.map(async (id) => (await setup.gw.services.store.getPayment(id))!),
      );
    }
    // Should a payment's transaction never be replaced, say what the records and the node's pool held.
    const seen = JSON.stringify({
      sent: sent.map((r) => ({ tx: r.txHash, relay: r.relay, state: r.state })),
      now: now.map((r) => ({ tx: r.txHash, relay: r.relay, state: r.state })),
      pool: await rpc.request({ method: "txpool_content" as never }),
    });
    now.forEach((r, i) => {
      expect(r.relay!.nonce).toBe(sent[i]!.relay!.nonce);
      if (r.relay!.nonce === lowestNonce) {
        expect(r.txHash, seen).not.toBe(sent[i]!.txHash);
        expect(BigInt(r.relay!.maxFeePerGas)).toBeGreaterThan(BigInt(sent[i]!.relay!.maxFeePerGas));
      } else expect(r.txHash, seen).toBe(sent[i]!.txHash);
    });

    await rpc.request({ method: "evm_setAutomine" as never, params: [true] as never });
    await rpc.request({ method: "evm_mine" as never, params: [] as never });
    const accounts = PAYERS.map((p) => walletAccountId(p.address));
    const until = Date.now() + 10_000;
    while (Date.now() < until) {
      const balances = await Promise.all(
        accounts.map(async (a) => (await setup.gw.services.store.getAccount(a))?.balance),
      );
      if (balances.every((b) => b === 1)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(
      await Promise.all(
        accounts.map(async (a) => (await setup.gw.services.store.getAccount(a))?.balance),
      ),
    ).toEqual([1, 1]);
    expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(payToBefore + 2n * PRICE);
    // The replacement was mined, not the original it replaced; the other, as sent.
    for (const r of now)
      expect((await rpc.getTransactionReceipt({ hash: r.txHash as Hex })).status).toBe("success");
    await expect(
      rpc.getTransactionReceipt({ hash: sent[lowest]!.txHash as Hex }),
    ).rejects.toThrow();
    // Each client retries its payment and gets its call.
    for (const h of headers)
      expect(
        (
          await call(`${setup.gw.url}/v1/tools/hash`, {
            method: "POST",
            body: { text: "stuck" },
            headers: h,
          })
        ).status,
      ).toBe(200);
    for (const a of accounts) {
      const purchases = (await setup.gw.services.store.ledger(a, { limit: 100 })).items.filter(
        (e) => e.kind === "purchase",
      );
      expect(purchases).toHaveLength(1);
    }
  }, 40_000);
});

const paidCall = async (payer: { address: `0x${string}` }, text: string, header?: string) => {
  const x =
    header ??
    v1Header(
      "base-sepolia",
      await signAuthorization({ account: payer as never, chain: setup.chains.base, value: PRICE }),
    );
  return {
    header: x,
    answer: await call(`${setup.gw.url}/v1/tools/hash`, {
      method: "POST",
      body: { text },
      headers: { "x-payment": x },
    }),
  };
};
const recordOf = async (payer: { address: string }) =>
  (await setup.gw.services.store.openPayments()).find(
    (r) => r.payer.toLowerCase() === payer.address.toLowerCase(),
  );
const purchasesOf = async (payer: { address: `0x${string}` }) =>
  (
    await setup.gw.services.store.ledger(walletAccountId(payer.address), { limit: 100 })
  ).items.filter((e) => e.kind === "purchase");
async function until(check: () => Promise<boolean>, ms: number) {
  const deadline = Date.now() + ms;
  while (!(await check()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
}

describe("settlements queued behind a nonce hole", () => {
  it("are not replaced while they wait (not stuck), and each is credited once when the hole fills", async () => {
    const rpc = createPublicClient({ transport: http(setup.chains.base.rpcUrl) });
    const store = setup.gw.services.store;
    const payToBefore = await balanceOf(setup.chains.base, PAY_TO);
    expect((await paidCall(QUEUED[0]!, "queued: the sequence exists")).answer.status).toBe(200);
    // A hole the gap filler must leave alone: a live settlement (a slow process) may hold it.
    const holder: PaymentRecord = {
      id: "test:hole-holder",
      network: "base-sepolia",
      payer: "0x0000000000000000000000000000000000000001",
      value: "0",
      state: "settling",
      accountId: "test:hole-holder",
      txHash: null,
      createdAt: Date.now(),
      authorization: {},
      signature: "0x",
      grant: {} as PaymentRecord["grant"],
    };
    await store.savePayment(holder);
    const sequence = `${setup.chains.base.chainId}:${(await rpc.getBlock({ blockNumber: 0n })).hash.slice(2, 18)}:${RELAYER.address.toLowerCase()}`;
    try {
      const hole = (await store.takeRelayerNonce(sequence, null))!;
      const queued = QUEUED.slice(1);
      const answers = await Promise.all(queued.map((p) => paidCall(p, "queued")));
      expect(answers.map((a) => a.answer.body.error?.code)).toEqual(
        queued.map(() => "payment_pending"),
      );
      const sent = await Promise.all(queued.map(async (p) => (await recordOf(p))!));
      for (const r of sent) expect(r.relay!.nonce).toBeGreaterThan(hole);
      // Several stuck periods (X402_STUCK_AFTER_MS 1 s) go by: none is replaced, no fee raised.
      await new Promise((r) => setTimeout(r, 4_500));
      const later = await Promise.all(queued.map(async (p) => (await recordOf(p))!));
      expect(later.map((r) => [r.txHash, r.relay!.maxFeePerGas])).toEqual(
        sent.map((r) => [r.txHash, r.relay!.maxFeePerGas]),
      );
      // The live settlement ends: the hole is filled, and the queue is mined as sent.
      await store.releasePayment(holder.id);
      await until(async () => (await store.openPayments()).length === 0, 15_000);
      for (const r of sent)
        expect((await rpc.getTransactionReceipt({ hash: r.txHash as Hex })).status).toBe("success");
      for (const [i, p] of queued.entries())
        expect((await paidCall(p, "queued", answers[i]!.header)).answer.status).toBe(200);
      // The books: one credit per payment, and exactly that much reached payTo.
      for (const p of QUEUED) expect(await purchasesOf(p)).toHaveLength(1);
      expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(
        payToBefore + BigInt(QUEUED.length) * PRICE,
      );
    } finally {
      await store.releasePayment(holder.id);
    }
  }, 40_000);
});

describe("a transaction stuck at the relayer's lowest nonce for many stuck periods", () => {
  it("is replaced with fees that never pass the cap on the chain's current fees, then credited once", async () => {
    const rpc = createPublicClient({ transport: http(setup.chains.base.rpcUrl) });
    const payToBefore = await balanceOf(setup.chains.base, PAY_TO);
    await rpc.request({ method: "evm_setAutomine" as never, params: [false] as never });
    try {
      const { header, answer } = await paidCall(CAPPED, "capped");
      expect(answer.body.error?.code).toBe("payment_pending");
      const first = (await recordOf(CAPPED))!;
      // No block is mined meanwhile: the chain's estimate stays what it is now.
      const cap = (await rpc.estimateFeesPerGas()).maxFeePerGas * REPLACEMENT_FEE_CAP;
      let last = first;
      let highest = 0n;
      const until = Date.now() + 7_000; // about six stuck periods
      while (Date.now() < until) {
        last = (await recordOf(CAPPED)) ?? last;
        for (const fee of [last.relay!.maxFeePerGas, last.relay!.maxPriorityFeePerGas])
          if (BigInt(fee) > highest) highest = BigInt(fee);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(last.txHash).not.toBe(first.txHash); // it was replaced
      expect(last.relay!.nonce).toBe(first.relay!.nonce);
      expect(highest).toBeLessThanOrEqual(cap);
      await rpc.request({ method: "evm_setAutomine" as never, params: [true] as never });
      await rpc.request({ method: "evm_mine" as never, params: [] as never });
      const settled = Date.now() + 10_000;
      while ((await recordOf(CAPPED)) && Date.now() < settled)
        await new Promise((r) => setTimeout(r, 100));
      expect((await paidCall(CAPPED, "capped", header)).answer.status).toBe(200);
      expect(await purchasesOf(CAPPED)).toHaveLength(1);
      expect(await balanceOf(setup.chains.base, PAY_TO)).toBe(payToBefore + PRICE);
    } finally {
      await rpc.request({ method: "evm_setAutomine" as never, params: [true] as never });
    }
  }, 40_000);
});
