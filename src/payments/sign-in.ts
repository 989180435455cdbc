import type { Hex } from "viem";
import { z } from "zod";
import { issueKeyWithinCap, keyCapReached } from "../accounts/accounts.js";
import { keyView, keyViewSchema } from "../accounts/views.js";
import { defineRoute } from "../http/route.js";
import { issueSiweChallenge, verifySiweChallenge, type SiwePurpose } from "./siwe.js";
import { ensureWalletAccount } from "./wallet-accounts.js";

/**
 * Sign-in with wallet for an API key (EIP-4361): a wallet that paid per call owns an account;
 * signing the challenge proves it holds the address and returns an API key for that account
 * (shown once). The challenge's rules (single-use nonce bound to the address, this gateway's
 * domain and uri, an expiry, ERC-1271 wallets checked on chain) are in siwe.ts, shared with the
 * dashboard's wallet sign-in.
 */
const API_KEY_CLAIM: SiwePurpose = {
  name: "api-key",
  statement: "Sign in to Toolgate to get an API key for this wallet's account.",
  chainIds: null,
};

export const walletChallenge = defineRoute({
  method: "post",
  path: "/wallet/challenge",
  summary:
    "An EIP-4361 (Sign-In with Ethereum) message to sign, to claim an API key for a paying wallet's account.",
  auth: "public",
  limit: "wallet-challenge",
  body: z.strictObject({
    address: z.string().regex(/^0x[0-9a-fA-F]{40}$/),
    chain_id: z.number().int().positive().default(1),
  }),
  response: z.object({ message: z.string(), expires_at: z.string() }),
  async handler({ services, body }) {
    const { message, expiresAt } = await issueSiweChallenge(
      services,
      API_KEY_CLAIM,
      body.address,
      body.chain_id,
    );
    return { body: { message, expires_at: expiresAt.toISOString() } };
  },
});

export const walletClaim = defineRoute({
  method: "post",
  path: "/wallet/claim",
  summary: "Exchange a signed challenge for an API key to the wallet's account (shown once).",
  auth: "public",
  limit: "wallet-claim",
  successStatus: 201,
  body: z.strictObject({
    message: z.string().max(2000),
    signature: z.string().regex(/^0x[0-9a-fA-F]+$/),
  }),
  response: z.object({ account_id: z.string(), api_key: z.string(), key: keyViewSchema }),
  async handler({ services, body }) {
    const address = await verifySiweChallenge(
      services,
      API_KEY_CLAIM,
      body.message,
      body.signature as Hex,
    );
    const account = await ensureWalletAccount(services, address);
    // Within the account's cap, as every other key a caller asks for: each claim adds a key.
    const cap = services.config.keysPerAccount;
    const issued = await issueKeyWithinCap(services, account.id, "wallet sign-in", {}, cap);
    if (!issued) throw keyCapReached(cap, "revoke one first (DELETE /api/v1/keys/{id}).");
    const { plaintext, key } = issued;
    return { status: 201, body: { account_id: account.id, api_key: plaintext, key: keyView(key) } };
  },
});
