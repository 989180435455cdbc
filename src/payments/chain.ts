import {
  createPublicClient,
  defineChain,
  fallback,
  type Hex,
  type LocalAccount,
  type PublicClient,
} from "viem";
import type { Config } from "../config.js";
import type { PaymentNetwork } from "./networks.js";
import { ReceiptWaiter } from "./receipt-wait.js";
import { loadNativeSecp256k1, relayerAccount } from "./relayer-account.js";
import { batchingHttp } from "./rpc-transport.js";
import { hashWith, loadNativeKeccak } from "./transaction-hash.js";

/**
 * viem clients per enabled network: a public client for reads, simulations and sends, and the
 * relayer accounts (one key, or a pool) that sign `transferWithAuthorization` transactions.
 * Every gateway process shares the relayer keys; each key's nonces come from one sequence in
 * the store, handed out atomically across processes (see relayers.ts). Their transactions are
 * signed natively where libsecp256k1 loads (relayer-account.ts), and hashed natively where the
 * keccak binding loads (transaction-hash.ts).
 */
export interface NetworkClients {
  network: PaymentNetwork;
  public: PublicClient;
  /** Settlement receipts are waited for here: one waiter per network learns how its chain mines. */
  receipts: ReceiptWaiter;
  relayers: LocalAccount[];
  /** Keccak-256 of a signed transaction: the hash it is known by on chain. */
  transactionHash: (signed: Hex) => Hex;
}

export function createChainClients(x402: NonNullable<Config["x402"]>): Map<string, NetworkClients> {
  const native = loadNativeSecp256k1();
  const transactionHash = hashWith(loadNativeKeccak());
  const relayers = x402.relayerKeys.map((key) => relayerAccount(key, native, transactionHash));
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
    // failing endpoint hands the request to the next. Reads made together (a verification's
    // block and simulation; concurrent receipt polls) leave as one
    // JSON-RPC batch: one round trip, however far the RPC is (rpc-transport.ts).
    const endpoints = network.rpcUrls.map((url) =>
      batchingHttp(url, {
        timeout: x402.rpcTimeoutMs,
        batchSize: x402.rpcBatchSize,
        // A sync send waits for its block: the settlement's own receipt deadline bounds it (relayers.ts).
        waitTimeout: x402.receiptTimeoutMs + x402.rpcTimeoutMs,
      }),
    );
    const transport =
      endpoints.length === 1 ? endpoints[0]! : fallback(endpoints, { retryCount: 0 });
    const client = createPublicClient({
      chain,
      transport,
      pollingInterval: x402.pollMs,
    }) as PublicClient;
    const entry: NetworkClients = {
      network,
      public: client,
      receipts: new ReceiptWaiter(client),
      relayers,
      transactionHash,
    };
    clients.set(network.name, entry);
    clients.set(network.caip2, entry);
  }
  return clients;
}
