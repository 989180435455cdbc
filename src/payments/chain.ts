import { createPublicClient, createWalletClient, defineChain, fallback, http, type Account, type PublicClient, type WalletClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { Config } from "../config.js";
import type { PaymentNetwork } from "./networks.js";

/**
 * viem clients per enabled network: a public client for reads and simulations, and the relayer
 * that submits `transferWithAuthorization`. Every gateway process shares the relayer key, so its
 * sends are serialised through a lock in the store and take their nonce from the chain's pending
 * count (see settle.ts) — an in-process nonce manager would collide across processes.
 */
export interface NetworkClients {
  network: PaymentNetwork;
  public: PublicClient;
  relayer: WalletClient & { account: Account };
}

export function createChainClients(x402: NonNullable<Config["x402"]>): Map<string, NetworkClients> {
  const account = privateKeyToAccount(x402.relayerKey);
  const clients = new Map<string, NetworkClients>();
  for (const network of x402.networks) {
    const chain = defineChain({
      id: network.chainId,
      name: network.name,
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: network.rpcUrls } },
    });
    // Short timeouts and no silent retries: an RPC that stops answering must surface quickly.
    // Several URLs fail over in order (viem's fallback transport): an unreachable, timed-out or
    // failing endpoint hands the request to the next.
    const endpoints = network.rpcUrls.map((url) => http(url, { timeout: x402.rpcTimeoutMs, retryCount: 0 }));
    const transport = endpoints.length === 1 ? endpoints[0]! : fallback(endpoints, { retryCount: 0 });
    const entry: NetworkClients = {
      network,
      public: createPublicClient({ chain, transport, pollingInterval: x402.pollMs }) as PublicClient,
      relayer: createWalletClient({ chain, transport, account }) as WalletClient & { account: Account },
    };
    clients.set(network.name, entry);
    clients.set(network.caip2, entry);
  }
  return clients;
}
