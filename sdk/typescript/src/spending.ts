/**
 * What a wallet-paying client is given: the wallet's type, the spending caps and their defaults.
 * Apart from payments.ts, which holds the x402 client: importing these loads neither @x402 nor
 * viem, so a key-only client (and its bundle) goes without them.
 */
import type { registerExactEvmScheme } from "@x402/evm/exact/client";

/** A viem account (e.g. `privateKeyToAccount(...)`): an address and EIP-712 signing. */
export type WalletAccount = Parameters<typeof registerExactEvmScheme>[1]["signer"];

export interface SpendingLimits {
  /** The most one call may cost, in USDC atomic units (6 decimals). Default 100000n ($0.10). */
  maxPerCall?: bigint | undefined;
  /** The most this client may spend in total, in USDC atomic units. Default 1000000n ($1.00). */
  maxPerSession?: bigint | undefined;
  /**
   * Tokens to pay with besides the canonical USDC the x402 client knows (e.g. a test token on a
   * local chain): `{ network: "eip155:84532", asset: "0x…" }`.
   */
  allowedAssets?: { network: `${string}:${string}`; asset: string }[] | undefined;
}

/** How the library's refusal of an unlisted token says to allow it; the CLI swaps in its flag. */
export const ALLOW_ASSET_ADVICE = "list the token in `spending.allowedAssets` ({ network, asset })";

export const DEFAULT_MAX_PER_CALL = 100_000n;
export const DEFAULT_MAX_PER_SESSION = 1_000_000n;
