import { toHex } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import type { Config } from "../config.js";

/**
 * Development only: a local anvil chain standing in for base-sepolia (chain id 84532) with the
 * project's test USDC, anvil's ten standard accounts funded with 1,000 test USDC each, the
 * relayer being anvil account 9 and payments going to account 8. Loaded lazily: production
 * never imports the chain fixtures.
 */
export async function startDevChain(): Promise<{
  x402: NonNullable<Config["x402"]>;
  rpcUrl: string;
  stop(): Promise<void>;
}> {
  const { ANVIL_MNEMONIC, anvilAccount, startLocalChain } = await import(
    "../../chain-fixtures/chain.js"
  );
  const accounts = Array.from({ length: 10 }, (_, i) => anvilAccount(i).address);
  const chain = await startLocalChain({
    chainId: 84532,
    usdcName: "USDC",
    usdcVersion: "2",
    fund: accounts,
    amount: 1_000_000_000n,
  });
  return {
    rpcUrl: chain.rpcUrl,
    stop: chain.stop,
    x402: {
      networks: [
        {
          name: "base-sepolia",
          chainId: 84532,
          caip2: "eip155:84532",
          rpcUrls: [chain.rpcUrl],
          usdc: { address: chain.usdc, name: "USDC", version: "2" },
        },
      ],
      payTo: anvilAccount(8).address,
      relayerKeys: [
        toHex(mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: 9 }).getHdKey().privateKey!),
      ],
      rpcBatchSize: 100,
      sendSync: 8,
      maxTimeoutSeconds: 300,
      receiptTimeoutMs: 30_000,
      rpcTimeoutMs: 10_000,
      pollMs: 100,
      batchWindowMs: 5,
      batchMax: 50,
      stuckAfterMs: 60_000,
      retentionSeconds: 24 * 3600,
      logRangeBlocks: 1_000,
    },
  };
}
