/**
 * A test gateway for client-library suites written in other languages (the Python one's pytest
 * conftest spawns this script): a real gateway process on a free port with Redis, a local anvil
 * chain standing in for Base Sepolia with the project's EIP-3009 token, x402 enabled, webhook
 * and custom-tool targets on loopback allowed and the test CA trusted, and a funded test wallet.
 *
 * It prints ONE JSON line on stdout once everything answers:
 *   {base_url, api_key, account_id, admin_key, chain_rpc, chain_id, token_address, pay_to,
 *    wallet_private_key, wallet_address, tls_dir, ca_cert}
 * and stops everything (gateway, chain, Redis keys, its own test CA) when its stdin closes, so a
 * test runner that dies cannot leave it behind.
 *
 * Run alone: `node --import tsx test/sdk/serve-gateway.ts` (needs Redis like the rest of the tests).
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { toHex, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import {
  ADMIN_KEY,
  dropPrefix,
  fundedAccount,
  spawnGateway,
  uniquePrefix,
} from "../helpers/gateway.js";
import { freshDatabase } from "../helpers/postgres.js";
import tlsSetup from "../helpers/tls-setup.js";
import { PAY_TO, relayerKey } from "../helpers/x402.js";
import { startLocalChain } from "../../chain-fixtures/chain.js";

// The test CA: the vitest run's own when there is one (NODE_EXTRA_CA_CERTS already set), else our own.
const removeTls = process.env.TEST_TLS_DIR ? null : tlsSetup();
const tlsDir = process.env.TEST_TLS_DIR!;

const walletKey = toHex(randomBytes(32)) as Hex;
const wallet = privateKeyToAccount(walletKey);
const chain = await startLocalChain({
  chainId: 84532,
  usdcName: "USDC",
  usdcVersion: "2",
  fund: [wallet.address],
  amount: 100_000_000n,
});
const prefix = uniquePrefix("sdk");
const stops: Array<() => Promise<unknown>> = [() => chain.stop(), () => dropPrefix(prefix)];

let stopping = false;
async function stopAll(code = 0) {
  if (stopping) return;
  stopping = true;
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  removeTls?.();
  process.exit(code);
}
for (const event of ["end", "close"] as const) process.stdin.on(event, () => stopAll());
process.stdin.resume();
for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => stopAll());

try {
  const gateway = await spawnGateway(prefix, {
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "1",
    // A Business account's custom tool may be the suite's own HTTPS receiver on loopback.
    UPSTREAM_ALLOW_PRIVATE_TARGETS: "1",
    // Every test signs up its own accounts from one address.
    SIGNUPS_PER_HOUR_PER_IP: "10000",
    X402_NETWORKS: "base-sepolia",
    BASE_SEPOLIA_RPC_URL: chain.rpcUrl,
    BASE_SEPOLIA_USDC_ADDRESS: chain.usdc,
    X402_PAY_TO: PAY_TO,
    X402_RELAYER_PRIVATE_KEY: relayerKey(),
    // The books (analytics read them): a database of the test run's PostgreSQL when there is
    // one (the vitest run's), else PGlite in the gateway's process.
    DATABASE_URL: process.env.TEST_DATABASE_URL ? await freshDatabase() : "pglite://memory",
    BOOKS_EXPORT_INTERVAL_MS: "500",
  });
  stops.splice(1, 0, () => gateway.stop());
  const account = await fundedAccount(gateway.url, 1000, "pro");
  process.stdout.write(
    `${JSON.stringify({
      base_url: gateway.url,
      api_key: account.key,
      account_id: account.accountId,
      admin_key: ADMIN_KEY,
      chain_rpc: chain.rpcUrl,
      chain_id: chain.chainId,
      token_address: chain.usdc,
      pay_to: PAY_TO,
      wallet_private_key: walletKey,
      wallet_address: wallet.address,
      tls_dir: tlsDir,
      ca_cert: join(tlsDir, "ca.pem"),
    })}\n`,
  );
} catch (err) {
  process.stderr.write(`serve-gateway: ${err instanceof Error ? err.stack : String(err)}\n`);
  await stopAll(1);
}
