import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureWalletAccount, walletAccountId } from "../../src/payments/wallet-accounts.js";
import type { PaymentRecord } from "../../src/store/types.js";
import { call, startGateway, type TestGateway } from "../helpers/gateway.js";
import {
  PAY_TO,
  balanceOf,
  fundedWallet,
  relayerKey,
  signAuthorization,
  startChains,
  v1Header,
} from "../helpers/x402.js";

/**
 * Two deployments (each its own Redis prefix and relayer key) on one chain, one token and one
 * X402_PAY_TO. The payer signs one authorization and sends it to both at once: it pays once on
 * chain, so exactly one deployment may credit it. The one whose transaction did not use it
 * answers as for any used authorization (409) and keeps no open record, and its reconciler
 * credits nothing later. Before, its failed settlement saw the authorization used (by the other
 * deployment's transaction), answered 503 payment_pending, and its reconciler credited the
 * wallet's account there too: one payment, two credits.
 */
const PRICE = 2000n;
let chains: Awaited<ReturnType<typeof startChains>>;
let a: TestGateway;
let b: TestGateway;
beforeAll(async () => {
  chains = await startChains([]);
  // Each payment its own transaction: a batch would only add timing to what is under test.
  const env = { ...chains.env, X402_BATCH_WINDOW_MS: "0" };
  a = await startGateway({ env });
  b = await startGateway({ env: { ...env, X402_RELAYER_PRIVATE_KEY: relayerKey(5) } });
}, 60_000);
afterAll(async () => {
  await a?.stop();
  await b?.stop();
  await chains?.stop();
});

const paymentId = (payer: Address, nonce: string) =>
  `${chains.base.chainId}:${chains.base.usdc}:${payer}:${nonce}`.toLowerCase();
const purchased = async (gw: TestGateway, accountId: string) =>
  (await gw.services.store.getAccount(accountId))
    ? (await gw.services.store.ledger(accountId, { limit: 100 })).items
        .filter((e) => e.kind === "purchase")
        .reduce((sum, e) => sum + e.amount, 0)
    : 0;
const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("one authorization sent to two deployments at once", () => {
  it("is paid once on chain and credited by exactly one of them, after the reconcilers too", async () => {
    for (let round = 0; round < 4; round++) {
      const payer = await fundedWallet(chains.base, 31_000 + round);
      const payload = await signAuthorization({ account: payer, chain: chains.base, value: PRICE });
      const header = v1Header("base-sepolia", payload);
      const payerBefore = await balanceOf(chains.base, payer.address);
      const answers = await Promise.all(
        [a, b].map((gw) =>
          call(`${gw.url}/v1/tools/hash`, {
            method: "POST",
            body: { text: `round ${round}` },
            headers: { "x-payment": header },
          }),
        ),
      );
      const statuses = answers.map((r) => r.status).sort();
      expect(statuses, JSON.stringify(answers.map((r) => r.body))).toEqual([200, 409]);
      const loser = answers.find((r) => r.status === 409)!;
      expect((loser.body as { error: { code: string } }).error.code).toBe("payment_already_used");

      // Past two reconciler passes (every second), nothing changed.
      await settle(2500);
      expect(await balanceOf(chains.base, payer.address)).toBe(payerBefore - PRICE);
      const accountId = walletAccountId(payer.address);
      const credits = [await purchased(a, accountId), await purchased(b, accountId)];
      expect(credits.sort()).toEqual([0, 1]);
      const losing = answers[0]!.status === 409 ? a : b;
      expect(
        await losing.services.store.getPayment(
          paymentId(payer.address, payload.authorization.nonce),
        ),
      ).toBeNull();
    }
  }, 120_000);

  it("a payment left pending at one deployment whose authorization the other used: its reconciler releases it uncredited", async () => {
    const payer = await fundedWallet(chains.base, 31_100);
    const payload = await signAuthorization({ account: payer, chain: chains.base, value: PRICE });
    const block = await fetch(chains.base.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
    }).then(async (r) => BigInt(((await r.json()) as { result: string }).result));
    const paid = await call(`${a.url}/v1/tools/hash`, {
      method: "POST",
      body: { text: "a only" },
      headers: { "x-payment": v1Header("base-sepolia", payload) },
    });
    expect(paid.status).toBe(200);

    // B's own settlement of the same authorization, its outcome unknown (no receipt in time).
    const accountId = walletAccountId(payer.address);
    await ensureWalletAccount(b.services, payer.address);
    const id = paymentId(payer.address, payload.authorization.nonce);
    const record: PaymentRecord = {
      id,
      network: "base-sepolia",
      payer: payer.address,
      value: PRICE.toString(),
      state: "settling",
      accountId,
      grant: { credits: 1, type: "one_time", plan: null, planChange: null, description: "hash" },
      txHash: null,
      createdAt: Date.now(),
      authorization: { ...payload.authorization },
      signature: payload.signature,
      resource: "http://127.0.0.1/v1/tools/hash",
      call: null,
      sentFromBlock: block.toString(),
    };
    expect(await b.services.store.claimPayment(record)).toBeNull();
    await b.services.store.savePayment({ ...record, state: "pending" });

    const deadline = Date.now() + 10_000;
    while ((await b.services.store.getPayment(id)) && Date.now() < deadline) await settle(200);
    expect(await b.services.store.getPayment(id)).toBeNull();
    expect(await purchased(b, accountId)).toBe(0);
    expect(await purchased(a, accountId)).toBe(1);
    expect(await balanceOf(chains.base, PAY_TO)).toBeGreaterThan(0n);
  }, 60_000);
});
