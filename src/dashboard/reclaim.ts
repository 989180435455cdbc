import { createHash } from "node:crypto";
import type { Router } from "express";
import { EMAIL_VERIFIED_CREDITS } from "../accounts/tiers.js";
import { ApiError } from "../http/errors.js";
import { enforceEndpointLimit } from "../http/endpoint-limits.js";
import { caseSensitiveRouter } from "../http/router.js";
import { esc } from "../pages/respond.js";
import type { Services } from "../services.js";
import { isRevoked } from "../store/types.js";
import { publicDashboardPage, sendDashboardPage } from "./layout.js";
import { newSecret, openSession, readAccountToken } from "./session.js";
import { field, formRoute } from "./sign-in.js";

/**
 * Taking back an account someone else signed up with your address. Sign-up gives a key before the
 * address is proven (the specification asks for that), so anyone can open an account in another
 * person's name; that person can always sign in by e-mailed link, and their verification e-mail
 * tells them what to do if they never signed up. Its second link, used once within
 * RECLAIM_LINK_MS, revokes every key of the account, ends every dashboard session, removes its
 * webhooks, custom tools and single sign-on (which would otherwise keep sending its events, or its
 * calls' inputs, somewhere, or let someone in), marks the address verified, and signs the owner in
 * to the dashboard to make a key of their own. The balance, plan and books stay: they are the
 * account's, now the owner's. As with the sign-in link, the GET shows a button and the POST spends
 * the token, so a mail scanner fetching links changes nothing.
 */
export const RECLAIM_PATH = "/dashboard/reclaim";
const RECLAIM_LINK_MS = 7 * 24 * 3600 * 1000;

const sha256 = (value: string) => createHash("sha256").update(value).digest("hex");
const reclaimNonce = (accountId: string, secret: string) =>
  `account-reclaim:${accountId}:${sha256(secret)}`;

/** A new single-use link that takes the account back, for its verification e-mail. */
export async function reclaimLink(services: Services, accountId: string): Promise<string> {
  const secret = newSecret();
  await services.store.saveNonce(reclaimNonce(accountId, secret), RECLAIM_LINK_MS);
  return `${services.config.publicBaseUrl}${RECLAIM_PATH}?token=${accountId}.${secret}`;
}

/** How many rounds the take-back makes at the most, each one after something was still found. */
const MAX_ROUNDS = 20;

/**
 * Everything someone other than the address's owner could have left on the account, removed. A
 * round ends every session, revokes every key, then removes webhooks, single sign-on and custom
 * tools; rounds go on until one finds nothing left. Someone holding a key or a session meanwhile
 * may make another key, or set one of these up, until that credential is ended: a later round
 * finds what landed before it, and every such write checks its credential again once written and
 * undoes itself if it has ended (http/auth.ts keepIfCredentialHolds; the SSO sign-in likewise).
 */
async function reclaimAccount(services: Services, accountId: string): Promise<void> {
  const { store } = services;
  for (let round = 1; round <= MAX_ROUNDS; round++) {
    await store.endAccountSessions(accountId);
    let found = 0;
    // Every key still working when listed counts, whoever ends it: a key its own rotation
    // revoked meanwhile has a replacement the next round finds.
    for (const key of await store.listKeys(accountId))
      if (!isRevoked(key)) {
        await store.revokeKey(accountId, key.id, 0);
        found++;
      }
    for (const hook of await store.listWebhooks(accountId))
      if (await store.deleteWebhook(accountId, hook.id)) found++;
    if (await store.deleteSsoConnection(accountId)) found++;
    for (const tool of await store.listCustomTools(accountId))
      if (await store.deleteCustomTool(accountId, tool.name)) found++;
    if (found === 0) break;
  }
  await store.verifyEmail(accountId, {
    amount: EMAIL_VERIFIED_CREDITS,
    requestId: `verify-email:${accountId}`,
    reason: "e-mail verified",
  });
}

export function reclaimRoutes(services: Services): Router {
  const router = caseSensitiveRouter();

  router.get(RECLAIM_PATH, (req, res) => {
    const token = typeof req.query.token === "string" ? req.query.token.slice(0, 200) : "";
    sendDashboardPage(
      res,
      publicDashboardPage({
        basePath: services.config.basePath,
        title: "Take back your account",
        body: `<p>If you did not sign up for Toolgate, someone else gave your e-mail address. Taking the account back:</p>
<ul><li>stops every API key of the account at once, and ends every dashboard session;</li>
<li>removes its webhooks, custom tools and single sign-on;</li>
<li>marks your address verified, and signs you in to the dashboard, where you can make a key of your own.</li></ul>
<p>Its credits and usage stay with the account. The link works once.</p>
<form method="post" action="${services.config.basePath}${RECLAIM_PATH}"><input type="hidden" name="token" value="${esc(token)}"><button type="submit">Take back the account</button></form>`,
      }),
    );
  });

  router.post(
    RECLAIM_PATH,
    formRoute(services, "dashboard-sign-in", async (req, res, requestId) => {
      await enforceEndpointLimit(services, req, "dashboard-sign-in", null, requestId);
      const token = readAccountToken(field(req, "token"));
      const valid =
        token && (await services.store.consumeNonce(reclaimNonce(token.accountId, token.secret)));
      if (!token || !valid || !(await services.store.getAccount(token.accountId)))
        throw new ApiError(
          "invalid_token",
          "This link does not work: it was used already, has expired, or was copied incompletely. Sign in with a link by e-mail instead; the Keys page revokes keys.",
          { param: "token" },
        );
      await reclaimAccount(services, token.accountId);
      await openSession(services, res, token.accountId, "email_link");
      res.redirect(303, `${services.config.basePath}/dashboard/keys`);
    }),
  );

  return router;
}
