import type { Address } from "viem";
import { listEntries } from "../lib/settings.js";

/**
 * The networks x402 payments can use, by their x402 v1 name. The chain id (and the v2 CAIP-2 id)
 * follows from the name; the token defaults to each chain's native USDC — never the bridged
 * USDC.e, whose EIP-712 domain differs.
 */
export const NETWORK_DEFAULTS = {
  base: {
    chainId: 8453,
    usdc: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
    usdcName: "USD Coin",
    usdcVersion: "2",
  },
  "base-sepolia": {
    chainId: 84532,
    usdc: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
    usdcName: "USDC",
    usdcVersion: "2",
  },
  polygon: {
    chainId: 137,
    usdc: "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359",
    usdcName: "USD Coin",
    usdcVersion: "2",
  },
  "polygon-amoy": {
    chainId: 80002,
    usdc: "0x41E94Eb019C0762f9Bfcf9Fb1E58725BfB0e7582",
    usdcName: "USDC",
    usdcVersion: "2",
  },
} as const satisfies Record<
  string,
  { chainId: number; usdc: string; usdcName: string; usdcVersion: string }
>;

export type NetworkName = keyof typeof NETWORK_DEFAULTS;
export const NETWORK_NAMES = Object.keys(NETWORK_DEFAULTS) as NetworkName[];

export interface PaymentNetwork {
  name: NetworkName;
  chainId: number;
  /** The x402 v2 (CAIP-2) id, e.g. eip155:8453. */
  caip2: `eip155:${number}`;
  /** One or more RPC endpoints, tried in order (viem's fallback transport). */
  rpcUrls: string[];
  usdc: { address: Address; name: string; version: string };
}

/** `BASE_SEPOLIA_RPC_URL` for base-sepolia: the upper-cased name with `-` as `_`; it may list several URLs, comma-separated. */
export const envPrefix = (name: NetworkName) => name.toUpperCase().replace(/-/g, "_");

export function networkFromEnv(
  name: NetworkName,
  env: NodeJS.ProcessEnv,
  problems: string[],
): PaymentNetwork | null {
  const prefix = envPrefix(name);
  const defaults = NETWORK_DEFAULTS[name];
  const rpcUrls = listEntries(env[`${prefix}_RPC_URL`] ?? "");
  if (rpcUrls.length === 0) {
    problems.push(`${prefix}_RPC_URL is required for the x402 network ${name}`);
    return null;
  }
  // The URL is not repeated in the problem: its path or password usually holds an API key, and
  // the configuration's problems are printed before any secret is known to redact.
  rpcUrls.forEach((url, i) => {
    if (!isHttpUrl(url))
      problems.push(
        `${prefix}_RPC_URL${rpcUrls.length > 1 ? `: URL ${i + 1} of ${rpcUrls.length}` : ""} is not a valid http(s) URL`,
      );
  });
  const address = env[`${prefix}_USDC_ADDRESS`] ?? defaults.usdc;
  if (!/^0x[0-9a-fA-F]{40}$/.test(address))
    problems.push(`${prefix}_USDC_ADDRESS is not an address`);
  return {
    name,
    chainId: defaults.chainId,
    caip2: `eip155:${defaults.chainId}`,
    rpcUrls,
    usdc: {
      address: address as Address,
      name: env[`${prefix}_USDC_NAME`] ?? defaults.usdcName,
      version: env[`${prefix}_USDC_VERSION`] ?? defaults.usdcVersion,
    },
  };
}

function isHttpUrl(text: string): boolean {
  try {
    const { protocol } = new URL(text);
    return protocol === "http:" || protocol === "https:";
  } catch {
    return false;
  }
}
