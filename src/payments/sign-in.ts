import type { Address, Hex } from "viem";
import { z } from "zod";
import { issueKey } from "../accounts/accounts.js";
import { keyView, keyViewSchema } from "../accounts/views.js";
import { ApiError } from "../http/errors.js";
import { defineRoute } from "../http/route.js";
import { ensureWalletAccount } from "./wallet-accounts.js";

/**
 * Sign-in with wallet (EIP-4361): a wallet that paid per call owns an account; signing the
 * challenge proves it holds the address and returns an API key for that account (shown once).
 * Nonces are single-use, live five minutes and are bound to the address they were issued for;
 * the signed message must name this gateway's origin as its `uri` and carry an expiry.
 * Smart-contract wallets are checked on chain (ERC-1271) when their chain is a payment network.
 */
const CHALLENGE_TTL_MS = 5 * 60_000;
const STATEMENT = "Sign in to Toolgate to get an API key for this wallet's account.";

/** The stored challenge: its nonce, bound to the address it was issued to. */
const challengeName = (address: string, nonce: string) => `siwe:${address.toLowerCase()}:${nonce}`;

/** viem, loaded by the first sign-in rather than at start-up (it is a large share of the gateway's start-up time). */
const loadViem = () => Promise.all([import("viem"), import("viem/siwe")]);

function originOf(uri: string): string | null {
  try {
    return new URL(uri).origin;
  } catch {
    return null;
  }
}

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
    const [{ getAddress }, { createSiweMessage, generateSiweNonce }] = await loadViem();
    const base = new URL(services.config.publicBaseUrl);
    const nonce = generateSiweNonce();
    const now = new Date();
    const expirationTime = new Date(now.getTime() + CHALLENGE_TTL_MS);
    const message = createSiweMessage({
      domain: base.host,
      uri: base.origin,
      address: getAddress(body.address),
      statement: STATEMENT,
      version: "1",
      chainId: body.chain_id,
      nonce,
      issuedAt: now,
      expirationTime,
    });
    await services.store.saveNonce(challengeName(body.address, nonce), CHALLENGE_TTL_MS);
    return { body: { message, expires_at: expirationTime.toISOString() } };
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
    const refused = (why: string) =>
      new ApiError("invalid_token", `The signed challenge is not valid: ${why}.`);
    const [{ getAddress, verifyMessage }, { parseSiweMessage, validateSiweMessage }] =
      await loadViem();
    const message = parseSiweMessage(body.message);
    const base = new URL(services.config.publicBaseUrl);
    const domain = base.host;
    if (!message.address || !message.nonce || !validateSiweMessage({ message, domain }))
      throw refused("wrong domain, expired or incomplete");
    if (message.statement !== STATEMENT) throw refused("not a Toolgate challenge");
    if (!message.expirationTime) throw refused("it has no expiration time");
    if (!message.uri || originOf(message.uri) !== base.origin)
      throw refused(`its uri is not ${base.origin}`);
    const address = getAddress(message.address) as Address;
    const onChain = services.payments?.clients.get(`eip155:${message.chainId}`);
    const valid = onChain
      ? await onChain.public.verifySiweMessage({
          message: body.message,
          signature: body.signature as Hex,
          address,
          domain,
        })
      : await verifyMessage({ address, message: body.message, signature: body.signature as Hex });
    if (!valid) throw refused("the signature is not the wallet's");
    // Single use, checked last so a bad signature cannot burn someone's challenge.
    // The challenge was issued for one address: another wallet cannot use its nonce.
    if (!(await services.store.consumeNonce(challengeName(address, message.nonce))))
      throw refused(
        "this challenge was not issued to this address, was already used, or has expired",
      );
    const account = await ensureWalletAccount(services, address);
    const { plaintext, key } = await issueKey(services, account.id, "wallet sign-in");
    return { status: 201, body: { account_id: account.id, api_key: plaintext, key: keyView(key) } };
  },
});
