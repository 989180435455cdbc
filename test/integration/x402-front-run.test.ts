import { createPublicClient, http } from "viem";
import { afterAll, beforeAll, expect, it } from "vitest";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { call, startGateway, type TestGateway } from "../helpers/gateway.js";
import {
  PAY_TO,
  balanceOf,
  fundedWallet,
  signAuthorization,
  startChains,
  useOnChain,
  v1Header,
} from "../helpers/x402.js";

/**
 * `transferWithAuthorization` may be sent by anyone: a third party watching the mempool can send
 * the payer's signed authorization before the gateway's own settlement lands. The money still
 * goes from the payer to X402_PAY_TO (the signature fixes the recipient), so the payer is
 * credited all the same; a rule that credited only the gateway's own transactions left the payer
 * with nothing for the price of the griefer's gas (docs/decisions.md, "X402_PAY_TO belongs to
 * one deployment").
 */
let chains: Awaited<ReturnType<typeof startChains>>;
let gw: TestGateway;
beforeAll(async () => {
  chains = await startChains([]);
  gw = await startGateway({
    env: { ...chains.env, X402_BATCH_WINDOW_MS: "0", X402_RECONCILE_INTERVAL_MS: "500" },
  });
}, 90_000);
afterAll(async () => {
  await gw?.stop();
  await chains?.stop();
});

it("credits a payer whose authorization a front-runner settled before the gateway's transaction", async () => {
  const rpc = chains.base.rpcUrl;
  const chain = createPublicClient({ transport: http(rpc) });
  const node = (method: string, params: unknown[] = []) =>
    chain.request({ method: method as never, params: params as never });
  const payer = await fundedWallet(chains.base, 41_000);
  const payload = await signAuthorization({ account: payer, chain: chains.base, value: 2000n });
  const paid = await balanceOf(chains.base, payer.address);
  const received = await balanceOf(chains.base, PAY_TO);

  // Blocks mined by hand: the gateway's settlement waits in the pool, where a front-runner sees it.
  await node("evm_setAutomine", [false]);
  const answer = call(`${gw.url}/v1/tools/hash`, {
    method: "POST",
    body: { text: "x" },
    headers: { "x-payment": v1Header("base-sepolia", payload) },
  });
  for (let i = 0; i < 500; i++) {
    const { pending } = (await node("txpool_status")) as { pending: string };
    if (BigInt(pending) > 0n) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  const pool = (await node("txpool_content")) as {
    pending: Record<
      string,
      Record<string, { maxPriorityFeePerGas?: string; maxFeePerGas?: string; gasPrice?: string }>
    >;
  };
  const settlement = Object.values(Object.values(pool.pending)[0]!)[0]!;
  // Paying more for its place in the block: it lands first, and the gateway's reverts.
  await useOnChain(chains.base, payload, {
    maxPriorityFeePerGas:
      BigInt(settlement.maxPriorityFeePerGas ?? settlement.gasPrice!) * 10n + 10n ** 9n,
    maxFeePerGas: BigInt(settlement.maxFeePerGas ?? settlement.gasPrice!) * 10n + 10n ** 10n,
  });
  await node("evm_mine");
  await node("evm_setAutomine", [true]);
  await answer;

  expect(paid - (await balanceOf(chains.base, payer.address))).toBe(2000n);
  expect((await balanceOf(chains.base, PAY_TO)) - received).toBe(2000n);
  // The reconciler reads the chain and credits the payment once.
  let purchases = 0;
  for (let waited = 0; waited < 15_000 && purchases === 0; waited += 250) {
    await new Promise((r) => setTimeout(r, 250));
    const account = walletAccountId(payer.address);
    if (!(await gw.services.store.getAccount(account))) continue;
    const { items } = await gw.services.store.ledger(account, { limit: 100 });
    purchases = items.filter((e) => e.kind === "purchase").length;
  }
  expect(purchases).toBe(1);
}, 60_000);
