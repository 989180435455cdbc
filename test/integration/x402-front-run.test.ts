import {
  createPublicClient,
  createWalletClient,
  http,
  isAddressEqual,
  parseSignature,
  type Hex,
} from "viem";
import { TOKEN_ABI, anvilAccount } from "../../chain-fixtures/chain.js";
import { afterAll, beforeAll, expect, it } from "vitest";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import { call, startGateway, type TestGateway } from "../helpers/gateway.js";
import { startRpcProxy } from "../helpers/rpc-proxy.js";
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
 * one deployment"). A payer who uses up its own authorization's nonce first (another transfer, a
 * cancellation) paid nothing: that payment is released, never credited, and no longer checked.
 */
let chains: Awaited<ReturnType<typeof startChains>>;
let gw: TestGateway;
// The gateway reads Base Sepolia through a proxy that counts what it asks (the reconciler's reads).
let proxy: Awaited<ReturnType<typeof startRpcProxy>>;
beforeAll(async () => {
  chains = await startChains([]);
  proxy = await startRpcProxy(chains.base.rpcUrl);
  gw = await startGateway({
    env: {
      ...chains.env,
      BASE_SEPOLIA_RPC_URL: proxy.url,
      X402_BATCH_WINDOW_MS: "0",
      X402_RECONCILE_INTERVAL_MS: "500",
    },
  });
}, 90_000);
afterAll(async () => {
  await gw?.stop();
  await proxy?.stop();
  await chains?.stop();
});

const node = (method: string, params: unknown[] = []) =>
  createPublicClient({ transport: http(chains.base.rpcUrl) }).request({
    method: method as never,
    params: params as never,
  });

/** Resolves once the node's pool holds a transaction (the gateway's settlement, automine off). */
async function settlementInPool() {
  for (let i = 0; i < 500; i++) {
    const { pending } = (await node("txpool_status")) as { pending: string };
    if (BigInt(pending) > 0n) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}

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

/** How a payer uses up its own authorization's nonce without paying: sent by an outsider at `fees`. */
type SpendNonce = (
  payer: Awaited<ReturnType<typeof fundedWallet>>,
  nonce: Hex,
  fees: { maxPriorityFeePerGas: bigint; maxFeePerGas: bigint },
) => Promise<void>;

/** The same nonce signed over to the payer itself, for 1 unit (the probe's way). */
const transferToSelf: SpendNonce = async (payer, nonce, fees) => {
  const own = await signAuthorization({
    account: payer,
    chain: chains.base,
    value: 1n,
    to: payer.address,
    nonce,
  });
  await useOnChain(chains.base, own, fees);
};

/** EIP-3009's cancelAuthorization: the nonce used up, no transfer and no AuthorizationUsed at all. */
const cancel: SpendNonce = async (payer, nonce, fees) => {
  const signature = await payer.signTypedData({
    domain: {
      name: "USDC",
      version: "2",
      chainId: chains.base.chainId,
      verifyingContract: chains.base.usdc,
    },
    types: {
      CancelAuthorization: [
        { name: "authorizer", type: "address" },
        { name: "nonce", type: "bytes32" },
      ],
    },
    primaryType: "CancelAuthorization",
    message: { authorizer: payer.address, nonce },
  });
  const { r, s, v } = parseSignature(signature);
  const outsider = createWalletClient({
    account: anvilAccount(6),
    transport: http(chains.base.rpcUrl),
  });
  await outsider.writeContract({
    address: chains.base.usdc,
    abi: TOKEN_ABI,
    functionName: "cancelAuthorization",
    args: [payer.address, nonce, Number(v), r, s],
    chain: null,
    gas: 200_000n,
    ...fees,
  } as never);
  await new Promise((r) => setTimeout(r, 200));
};

it.each([
  ["signs it over to itself", transferToSelf, 42_000],
  ["cancels it", cancel, 43_000],
] as const)(
  "releases, without credit, a payment whose payer used its authorization's nonce elsewhere while it settled (payer %s)",
  async (_, spendNonce, seed) => {
    const payer = await fundedWallet(chains.base, seed);
    const payload = await signAuthorization({ account: payer, chain: chains.base, value: 2000n });
    const header = v1Header("base-sepolia", payload);
    const received = await balanceOf(chains.base, PAY_TO);
    const paidCall = () =>
      call(`${gw.url}/v1/tools/hash`, {
        method: "POST",
        body: { text: "x" },
        headers: { "x-payment": header },
      });

    // While the gateway's settlement waits in the pool, the payer uses its nonce at a higher fee:
    // that lands first, and the gateway's transaction reverts.
    await node("evm_setAutomine", [false]);
    const answer = paidCall();
    await settlementInPool();
    await spendNonce(payer, payload.authorization.nonce as Hex, {
      maxPriorityFeePerGas: 500n * 10n ** 9n,
      maxFeePerGas: 1000n * 10n ** 9n,
    });
    await node("evm_mine");
    await node("evm_setAutomine", [true]);
    // Nothing moved to us: not served, and the first answer cannot know more yet.
    expect((await answer).status).toBe(503);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(received);

    // The reconciler finds the authorization used up without paying us and closes the record
    // (before, it stayed pending for good, read from the chain every pass).
    const open = async () =>
      (await gw.services.store.openPayments()).filter((p) =>
        isAddressEqual(p.payer as Hex, payer.address),
      );
    for (let waited = 0; waited < 10_000 && (await open()).length > 0; waited += 250)
      await new Promise((r) => setTimeout(r, 250));
    expect(await open()).toEqual([]);
    proxy.resetCounts();
    await new Promise((r) => setTimeout(r, 2000)); // four reconciler passes
    expect(proxy.counts.methods.eth_getLogs ?? 0).toBe(0);
    expect(proxy.counts.methods.eth_getTransactionReceipt ?? 0).toBe(0);

    // A retry of the payment is refused as used, not "pending, do not pay again"; never credited.
    const retry = await paidCall();
    expect(retry.status).toBe(409);
    expect(retry.body.error.code).toBe("payment_already_used");
    const account = await gw.services.store.getAccount(walletAccountId(payer.address));
    expect(account?.balance ?? 0).toBe(0);
    if (account) {
      const { items } = await gw.services.store.ledger(account.id, { limit: 100 });
      expect(items.filter((e) => e.kind === "purchase")).toEqual([]);
    }
    expect(await balanceOf(chains.base, PAY_TO)).toBe(received);
  },
  60_000,
);

it("keeps pending, never releases, a payment whose own settlement used the authorization but paid what its record does not describe", async () => {
  // A gateway that answers 503 pending a second after sending, so the reconciler finishes the payment.
  const quick = await startGateway({
    env: {
      ...chains.env,
      X402_BATCH_WINDOW_MS: "0",
      X402_RECONCILE_INTERVAL_MS: "250",
      X402_RECEIPT_TIMEOUT_MS: "1000",
    },
  });
  try {
    const payer = await fundedWallet(chains.base, 44_000);
    const payload = await signAuthorization({ account: payer, chain: chains.base, value: 2000n });
    await node("evm_setAutomine", [false]);
    const answer = await call(`${quick.url}/v1/tools/hash`, {
      method: "POST",
      body: { text: "x" },
      headers: { "x-payment": v1Header("base-sepolia", payload) },
    });
    expect(answer.status).toBe(503);
    const open = async () =>
      (await quick.services.store.openPayments()).filter((p) =>
        isAddressEqual(p.payer as Hex, payer.address),
      );
    const [record] = await open();
    // The record names another pay-to than the transfer our own transaction makes (an older
    // record, a configuration changed under it): an error to look into, not a payer's doing.
    await quick.services.store.savePayment({
      ...record!,
      payTo: "0x000000000000000000000000000000000000dEaD",
    });
    await node("evm_mine");
    await node("evm_setAutomine", [true]);
    await new Promise((r) => setTimeout(r, 2000)); // eight reconciler passes
    expect(await open()).toHaveLength(1);
    // Told what it pays, the reconciler credits it once.
    await quick.services.store.savePayment({ ...record!, payTo: PAY_TO });
    for (let waited = 0; waited < 10_000 && (await open()).length > 0; waited += 250)
      await new Promise((r) => setTimeout(r, 250));
    expect(await open()).toEqual([]);
    expect((await quick.services.store.getAccount(walletAccountId(payer.address)))?.balance).toBe(
      1,
    );
  } finally {
    await node("evm_setAutomine", [true]);
    await quick.stop();
  }
}, 60_000);
