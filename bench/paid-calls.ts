/**
 * x402 paid calls on a local anvil chain, against the chain's own settlement time measured in
 * the same run: the baseline submits the same kind of pre-signed transferWithAuthorization
 * straight to the chain from a bare relayer and waits for the receipt; the gateway run sends
 * paid `hash` calls (verify → claim → settle → credit → debit → forward → answer). Prints paid
 * calls per second and the p50/p99 the gateway adds beyond the chain's own confirmation.
 * Loopback only; bounded by BENCH_PAID_CALLS.
 *
 *   npm run bench:paid        (Redis at 127.0.0.1:6379; BENCH_PAID_CALLS=200 BENCH_CONCURRENCY=8)
 */
import { createPublicClient, createWalletClient, http, nonceManager, parseSignature, toHex, type Hex } from "viem";
import { mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import { ANVIL_MNEMONIC, TOKEN_ABI, randomWallet, startLocalChain } from "../chain-fixtures/chain.js";
import { dropPrefix, uniquePrefix } from "../test/helpers/redis.js";
import { spawnGateway, spawnService } from "../test/helpers/gateway.js";
import { PAY_TO, relayerKey, signAuthorization, v1Header } from "../test/helpers/x402.js";
import { percentile } from "./stats.js";

const CALLS = Number(process.env.BENCH_PAID_CALLS ?? 200);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const PRICE = 2000n;

async function timed<T>(items: T[], concurrency: number, run: (item: T) => Promise<void>) {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const item = items[next++]!;
        const t = performance.now();
        await run(item);
        latencies.push(performance.now() - t);
      }
    }),
  );
  return { rps: items.length / ((performance.now() - started) / 1000), latencies: latencies.sort((a, b) => a - b) };
}

async function main() {
  const wallets = Array.from({ length: 2 * CALLS }, (_, i) => randomWallet(50_000 + i));
  const chain = await startLocalChain({ chainId: 84532, usdcName: "USDC", usdcVersion: "2" });
  for (const w of wallets) await chain.fund(w.address, 100_000n);
  const prefix = uniquePrefix("benchpaid");
  const workers = await spawnService("src/workers/main.ts", "workers listening", { PORT: "0", LOG_LEVEL: "info" });
  workers.child.stdout!.resume();
  const gateway = await spawnGateway(prefix, {
    WORKERS_URL: workers.url,
    X402_NETWORKS: "base-sepolia",
    BASE_SEPOLIA_RPC_URL: chain.rpcUrl,
    BASE_SEPOLIA_USDC_ADDRESS: chain.usdc,
    X402_PAY_TO: PAY_TO,
    X402_RELAYER_PRIVATE_KEY: relayerKey(),
  });
  gateway.child.stdout!.resume();
  try {
    // Client-side signing happens before the clock starts, for both runs.
    const sign = (w: (typeof wallets)[number]) => signAuthorization({ account: w, chain, value: PRICE });
    const direct = await Promise.all(wallets.slice(0, CALLS).map(sign));
    const paid = await Promise.all(wallets.slice(CALLS).map(async (w) => v1Header("base-sepolia", await sign(w))));

    // Baseline: a bare relayer (its own key, viem's nonce manager) settling straight on the chain.
    const bare = privateKeyToAccount(toHex(mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 7 }).getHdKey().privateKey!), { nonceManager });
    const pub = createPublicClient({ transport: http(chain.rpcUrl) });
    const relayer = createWalletClient({ account: bare, transport: http(chain.rpcUrl) });
    const chainOnly = await timed(direct, CONCURRENCY, async ({ authorization: a, signature }) => {
      const { r, s, v } = parseSignature(signature as Hex);
      const hash = await relayer.writeContract({
        address: chain.usdc,
        abi: TOKEN_ABI,
        functionName: "transferWithAuthorization",
        args: [a.from, a.to, BigInt(a.value), BigInt(a.validAfter), BigInt(a.validBefore), a.nonce, Number(v), r, s],
        chain: null,
      } as never);
      await pub.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    });

    let errors = 0;
    const throughGateway = await timed(paid, CONCURRENCY, async (header) => {
      const res = await fetch(`${gateway.url}/v1/tools/hash`, { method: "POST", headers: { "content-type": "application/json", "x-payment": header }, body: '{"text":"bench"}' });
      await res.text();
      if (res.status !== 200) errors++;
    });

    const row = (name: string, r: { rps: number; latencies: number[] }) => `${name.padEnd(26)} ${r.rps.toFixed(1).padStart(8)} ${percentile(r.latencies, 50).toFixed(1).padStart(9)} ${percentile(r.latencies, 99).toFixed(1).padStart(9)}`;
    console.log(`\nToolgate bench — x402 paid calls on anvil (automine), ${CALLS} payments per run, ${CONCURRENCY} at a time`);
    console.log(`${"".padEnd(26)} ${"per s".padStart(8)} ${"p50 ms".padStart(9)} ${"p99 ms".padStart(9)}`);
    console.log(row("chain only (settle+receipt)", chainOnly));
    console.log(row("paid call through gateway", throughGateway));
    console.log(`throughput ratio (gateway / chain only): ${(throughGateway.rps / chainOnly.rps).toFixed(2)}; failed paid calls: ${errors}`);
    console.log(`time the gateway adds beyond the chain's confirmation: p50 +${(percentile(throughGateway.latencies, 50) - percentile(chainOnly.latencies, 50)).toFixed(1)} ms, p99 +${(percentile(throughGateway.latencies, 99) - percentile(chainOnly.latencies, 99)).toFixed(1)} ms`);
    if (errors) process.exitCode = 1;
  } finally {
    await gateway.stop();
    await workers.stop();
    await chain.stop();
    await dropPrefix(prefix);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
