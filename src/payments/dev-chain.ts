import { toHex } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import type { Config, PaymentTuning } from "../config.js";

/**
 * Development only: a local anvil chain standing in for base-sepolia (chain id 84532) with the
 * project's test USDC, anvil's ten standard accounts funded with 1,000 test USDC each, the
 * relayer being anvil account 9 and payments going to account 8. Loaded lazily: production
 * never imports the chain fixtures. Everything else about payments (`tuning`) is as configured.
 */
export async function startDevChain(tuning: PaymentTuning): Promise<{
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
      ...tuning,
    },
  };
}
