import type { Router, RequestHandler } from "express";
import type { Hex } from "viem";
import { z } from "zod";
import { ApiError } from "../http/errors.js";
import { jsonBody } from "../http/json-body.js";
import { requireJsonBody } from "../http/request-context.js";
import { defineRoute, routeHandler, type AnyRoute } from "../http/route.js";
import { issueSiweChallenge, verifySiweChallenge, type SiwePurpose } from "../payments/siwe.js";
import { ensureWalletAccount } from "../payments/wallet-accounts.js";
import { esc } from "../pages/respond.js";
import type { Services } from "../services.js";
import { openSession, requireSameOrigin } from "./session.js";
import { caseSensitiveRouter } from "../http/router.js";

/**
 * Signing in to the dashboard with a wallet (EIP-4361, Sign-In with Ethereum), into the account
 * the wallet's x402 payments go to (decisions.md D7; created at the first sign-in if it has not
 * paid yet). It ends in the same server-side session as the key and the e-mailed link.
 *
 * The page's script (`/dashboard/assets/wallet.js`) asks the browser wallet (EIP-1193) for its
 * address and chain, gets a challenge written by the gateway, has the wallet sign it
 * (`personal_sign`) and posts it back. The challenge's rules — single-use nonce bound to the
 * address, this gateway's domain and uri, an expiry, a chain id among the x402 networks — are
 * in payments/siwe.ts, shared with the API-key claim; the statement differs, so a key-claim
 * challenge does not open a session and a sign-in challenge does not issue a key.
 *
 * Both endpoints are unauthenticated JSON: they answer in the API's one error shape, count
 * against the per-address limits of the other sign-in endpoints, and refuse cross-site posts.
 */
export const WALLET_SCRIPT_PATH = "/dashboard/assets/wallet.js";
export const WALLET_CHALLENGE_PATH = "/dashboard/sign-in/wallet/challenge";
export const WALLET_SIGN_IN_PATH = "/dashboard/sign-in/wallet";

const STATEMENT = "Sign in to the Toolgate dashboard with this wallet's account.";

/** The x402 networks' chain ids; 501 when the gateway takes no x402 payments (there are no wallet accounts then). */
function dashboardPurpose(services: Services): SiwePurpose {
  if (!services.payments)
    throw new ApiError(
      "payments_not_enabled",
      "Wallet sign-in needs x402 payments, which this gateway does not take (no X402_NETWORKS configured).",
    );
  return {
    name: "dashboard",
    statement: STATEMENT,
    chainIds: services.payments.config.networks.map((n) => n.chainId),
  };
}

const challenge = defineRoute({
  method: "post",
  path: WALLET_CHALLENGE_PATH,
  summary: "An EIP-4361 message for the wallet to sign, to sign in to the dashboard.",
  auth: "public",
  limit: "wallet-challenge",
  body: z.strictObject({
    address: z.string().regex(/^0x[0-9a-fA-F]{40}$/, "must be a 20-byte hex address"),
    chain_id: z.number().int().positive(),
  }),
  async handler({ services, body }) {
    const purpose = dashboardPurpose(services);
    const { message, expiresAt } = await issueSiweChallenge(
      services,
      purpose,
      body.address,
      body.chain_id,
    );
    return { body: { message, expires_at: expiresAt.toISOString() } };
  },
});

const signIn = defineRoute({
  method: "post",
  path: WALLET_SIGN_IN_PATH,
  summary: "Open a dashboard session with a signed EIP-4361 message (sets the session cookie).",
  auth: "public",
  limit: "dashboard-sign-in",
  body: z.strictObject({
    message: z.string().max(2000),
    signature: z.string().regex(/^0x([0-9a-fA-F]{2})+$/, "must be hex bytes"),
  }),
  async handler({ services, res, body }) {
    const purpose = dashboardPurpose(services);
    const address = await verifySiweChallenge(
      services,
      purpose,
      body.message,
      body.signature as Hex,
    );
    const account = await ensureWalletAccount(services, address);
    await openSession(services, res, account.id, "wallet");
    return {
      body: { account_id: account.id, address, redirect: `${services.config.basePath}/dashboard` },
    };
  },
});

const ROUTES: AnyRoute[] = [challenge, signIn];

/** The two endpoints; what else they answer (405) is declared with the dashboard's paths. */
export function walletSignInRoutes(services: Services): Router {
  const router = caseSensitiveRouter();
  const sameOrigin: RequestHandler = (req, _res, next) => {
    requireSameOrigin(req);
    next();
  };
  const body = jsonBody({
    limitBytes: services.config.bodyLimitBytes,
    maxDepth: services.config.bodyMaxDepth,
  });
  for (const route of ROUTES)
    router.post(route.path, sameOrigin, requireJsonBody, body, routeHandler(services, route));
  return router;
}

/** The sign-in page's wallet section (with its script); empty when the gateway takes no x402 payments. */
export function walletSignInSection(services: Services): string {
  if (!services.payments) return "";
  const chains = services.payments.config.networks.map((n) => n.chainId).join(",");
  return `<section aria-labelledby="with-wallet" id="wallet-sign-in" data-chain-ids="${esc(chains)}"><h2 id="with-wallet">With a wallet</h2>
<p>Sign a message with your browser wallet (Sign-In with Ethereum) to open the account your wallet's x402 payments go to. Nothing is paid and no transaction is sent.</p>
<p><button type="button" data-action="wallet-sign-in">Sign in with a wallet</button></p>
<p class="muted" id="wallet-status" role="status" aria-live="polite"></p>
<script src="${services.config.basePath}${WALLET_SCRIPT_PATH}" defer></script></section>`;
}
