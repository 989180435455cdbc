import { createPublicClient, http, type Hex } from "viem";
import { describe, expect, it } from "vitest";
import { anvilAccount } from "../../chain-fixtures/chain.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { call } from "../helpers/gateway.js";
import {
  PAY_TO,
  balanceOf,
  paidGatewayFixture,
  signAuthorization,
  v1Header,
} from "../helpers/x402.js";

/**
 * Settlement transactions that sit unmined (here: the chain stops mining) are replaced at the same
 * nonce with higher fees, so one stuck transaction does not hold up the relayer for good; when
 * blocks come again, each payment is credited once, from whichever transaction was mined.
 */
const PRICE = 2000n;
const PAYERS = [anvilAccount(1), anvilAccount(2)];
const setup = paidGatewayFixture({
  fund: PAYERS.map((p) => p.address),
  env: { X402_RECEIPT_TIMEOUT_MS: "800", X402_STUCK_AFTER_MS: "1000" },
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
    // The reconciler replaces both (same nonces, higher fees).
    const deadline = Date.now() + 10_000;
    let now = sent;
    while (now.some((r, i) => r.txHash === sent[i]!.txHash) && Date.now() < deadline) {
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
      expect(r.txHash, seen).not.toBe(sent[i]!.txHash);
      expect(r.relay!.nonce).toBe(sent[i]!.relay!.nonce);
      expect(BigInt(r.relay!.maxFeePerGas)).toBeGreaterThan(BigInt(sent[i]!.relay!.maxFeePerGas));
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
    // The replacements were mined, not the originals.
    for (const [i, r] of now.entries()) {
      expect((await rpc.getTransactionReceipt({ hash: r.txHash as Hex })).status).toBe("success");
      await expect(rpc.getTransactionReceipt({ hash: sent[i]!.txHash as Hex })).rejects.toThrow();
    }
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
