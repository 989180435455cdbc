import { createHash } from "node:crypto";
import { parseCookie, stringifySetCookie } from "cookie";
import type { Router, Request } from "express";
import { SSO_CALLBACK_PATH, emailDomainOf, emailDomainSchema } from "../accounts/sso/connection.js";
import {
  type AttemptChecks,
  type DiscoveredProvider,
  authorizationUrl,
  discoverProvider,
  newAttemptChecks,
  providerFailure,
  redeemCallback,
} from "../accounts/sso/provider.js";
import { TIERS } from "../accounts/tiers.js";
import { enforceEndpointLimit } from "../http/endpoint-limits.js";
import { ApiError } from "../http/errors.js";
import { ACCOUNT_ID_PATTERN } from "../lib/ids.js";
import { sameSecret } from "../lib/same-secret.js";
import type { Services } from "../services.js";
import type { SsoConnectionRecord } from "../store/types.js";
import { openSecret } from "../webhooks/secrets.js";
import { esc } from "../pages/respond.js";
import { publicDashboardPage, sendDashboardPage } from "./layout.js";
import { openSession } from "./session.js";
import { field, formRoute, sendSignInRefusal } from "./sign-in.js";
import { caseSensitiveRouter } from "../http/router.js";

/**
 * Signing in to the dashboard with single sign-on (Business): OpenID Connect's authorization code
 * flow with PKCE against the account's own provider (src/accounts/sso), ending in the same
 * server-side session as the other ways in.
 *
 * 1. The sign-in page's form names the account — a work e-mail address or its domain (found
 *    through the domains the account's connection holds), or the account id. The gateway discovers
 *    the provider, keeps this attempt's state, nonce and PKCE verifier server-side (single use, ten
 *    minutes), puts the state in a short-lived HttpOnly cookie too, and sends the browser to the
 *    provider — with a page that goes on at once (meta refresh, and a link), not a redirect: the
 *    sign-in page's CSP (`form-action 'self'`) rightly forbids its forms to redirect elsewhere.
 * 2. The provider sends the browser back to /dashboard/sso/callback. The state must be the one in
 *    this browser's cookie (a callback link made by someone else signs no one in) and an attempt
 *    not yet used; openid-client then redeems the code and checks the ID token (issuer, audience,
 *    nonce, signature). The e-mail address it names must be in one of the connection's domains,
 *    and not marked unverified by the provider. Only then is the session opened.
 *
 * Both steps are unauthenticated: each counts against the `dashboard-sso` limit per address (the
 * first also per account: it makes a request to that account's provider). Every refusal is shown
 * on the sign-in page as `sso_sign_in_failed` (401), or `sso_provider_unavailable` (502) when the
 * provider could not be used.
 */
const ATTEMPT_MS = 10 * 60_000;

interface Attempt {
  accountId: string;
  issuer: string;
  clientId: string;
  nonce: string;
  codeVerifier: string;
}

const sha256 = (value: string) => createHash("sha256").update(value).digest();
const attemptName = (state: string) => `sso-attempt:${sha256(state).toString("hex")}`;

const refused = (message: string) => new ApiError("sso_sign_in_failed", message);
const START_AGAIN = "Start again from the sign-in page.";

/** The attempt's cookie: `__Host-` bound in production, sent back on the provider's top-level redirect (SameSite=Lax). */
function attemptCookie(services: Services, state: string, maxAgeSeconds: number): string {
  const production = services.config.env === "production";
  return stringifySetCookie({
    name: production ? "__Host-tg_sso" : "tg_sso",
    value: state,
    httpOnly: true,
    secure: production,
    sameSite: "lax",
    path: "/",
    maxAge: maxAgeSeconds,
  });
}

const attemptCookieValue = (services: Services, req: Request) =>
  parseCookie(req.get("cookie") ?? "")[
    services.config.env === "production" ? "__Host-tg_sso" : "tg_sso"
  ] ?? "";

/**
 * The account the sign-in form names: by account id, or by an e-mail address's (or a bare)
 * domain; null when no account uses single sign-on for that domain.
 */
async function accountNamed(services: Services, given: string): Promise<string | null> {
  if (ACCOUNT_ID_PATTERN.test(given)) return given;
  const domain = given.includes("@")
    ? emailDomainOf(given)
    : (emailDomainSchema.safeParse(given).data ?? null);
  if (!domain)
    throw new ApiError(
      "validation_failed",
      "Enter your work e-mail address, its domain (example.com), or your account ID (acct_…).",
      { param: "sso" },
    );
  return services.store.accountIdBySsoDomain(domain);
}

/** The account's connection, when the account may use it (Business, SSO still set up). */
async function usableConnection(
  services: Services,
  accountId: string,
): Promise<SsoConnectionRecord | null> {
  const [account, connection] = await Promise.all([
    services.store.getAccount(accountId),
    services.store.getSsoConnection(accountId),
  ]);
  return account && connection && TIERS[account.tier].features.includes("sso") ? connection : null;
}

/** Runs `step` with the connection's provider discovered; a provider failure becomes the refusal a person can act on. */
async function withProvider<T>(
  services: Services,
  connection: SsoConnectionRecord,
  step: (provider: DiscoveredProvider) => Promise<T>,
): Promise<T> {
  let provider: DiscoveredProvider | null = null;
  try {
    provider = await discoverProvider(
      {
        issuer: connection.issuer,
        clientId: connection.clientId,
        clientSecret: openSecret(services.config.secretKeys, connection.sealedClientSecret),
      },
      services.config.ssoAllowPrivateTargets,
    );
    return await step(provider);
  } catch (err) {
    const failure = providerFailure(err);
    if (!failure) throw err;
    if (failure.unreachable || !provider)
      throw new ApiError(
        "sso_provider_unavailable",
        `Your identity provider (${connection.issuer}) could not be used: ${failure.reason}. Try again later, or sign in another way.`,
      );
    throw refused(`Your identity provider's answer was refused: ${failure.reason}. ${START_AGAIN}`);
  } finally {
    await provider?.close();
  }
}

/** The hand-over to the provider: on at once, or by the link. */
function continuePage(services: Services, target: URL): string {
  return publicDashboardPage({
    basePath: services.config.basePath,
    title: "Continue to your identity provider",
    head: `<meta http-equiv="refresh" content="0;url=${esc(target.href)}">`,
    body: `<p>Signing in with your organisation's identity provider (${esc(target.host)}).</p>
<p><a id="sso-continue" href="${esc(target.href)}">Continue to sign in</a></p>`,
  });
}

export function ssoSignInRoutes(services: Services): Router {
  const router = caseSensitiveRouter();
  const redirectUri = () => `${services.config.publicBaseUrl}${SSO_CALLBACK_PATH}`;

  router.post(
    "/dashboard/sign-in/sso",
    formRoute(services, "dashboard-sso", async (req, res, requestId) => {
      const given = field(req, "sso").toLowerCase();
      const accountId = await accountNamed(services, given);
      // Counted before saying whether the domain is known: unlimited, the answers would list
      // which companies use single sign-on here.
      await enforceEndpointLimit(services, req, "dashboard-sso", accountId, requestId);
      const connection = accountId && (await usableConnection(services, accountId));
      if (!accountId || !connection)
        throw new ApiError("not_found", `No single sign-on is set up for ${given}.`, {
          param: "sso",
        });
      const checks: AttemptChecks = await newAttemptChecks();
      const target = await withProvider(services, connection, (provider) =>
        authorizationUrl(provider, redirectUri(), checks),
      );
      const attempt: Attempt = {
        accountId,
        issuer: connection.issuer,
        clientId: connection.clientId,
        nonce: checks.nonce,
        codeVerifier: checks.codeVerifier,
      };
      await services.store.saveOnce(attemptName(checks.state), JSON.stringify(attempt), ATTEMPT_MS);
      res.append("Set-Cookie", attemptCookie(services, checks.state, ATTEMPT_MS / 1000));
      sendDashboardPage(res, continuePage(services, target));
    }),
  );

  router.get(SSO_CALLBACK_PATH, async (req, res) => {
    try {
      await enforceEndpointLimit(
        services,
        req,
        "dashboard-sso",
        null,
        String(res.locals.requestId),
      );
      // The attempt ends here, whatever the outcome: its cookie goes.
      res.append("Set-Cookie", attemptCookie(services, "", 0));
      const state = typeof req.query.state === "string" ? req.query.state : "";
      const browserState = attemptCookieValue(services, req);
      if (!state || !browserState || !sameSecret(state, browserState))
        throw refused(
          `This sign-in was not started in this browser, or it is over already. ${START_AGAIN}`,
        );
      const saved = await services.store.takeOnce(attemptName(state));
      if (!saved)
        throw refused(`This sign-in attempt has expired or was used already. ${START_AGAIN}`);
      const attempt = JSON.parse(saved) as Attempt;
      // Checked before the provider is asked, and again once the session exists: the provider's
      // answer can take as long as the provider likes, and an account taken back meanwhile
      // (dashboard/reclaim.ts) has its connection removed and its sessions ended before that.
      // The session then lasts only while this very connection is the account's (session.ts): one
      // removed and set up anew meanwhile (even for a moment, by a request undoing itself) is not it.
      const current = async () => {
        const now = await usableConnection(services, attempt.accountId);
        if (!now || now.issuer !== attempt.issuer || now.clientId !== attempt.clientId)
          throw refused(
            `Single sign-on for this account was changed or turned off during the sign-in. ${START_AGAIN}`,
          );
        return now;
      };
      const connection = await current();
      const stillSetUp = async () => {
        if ((await current()).createdAt !== connection.createdAt)
          throw refused(
            `Single sign-on for this account was changed or turned off during the sign-in. ${START_AGAIN}`,
          );
      };
      // The redirect URI as registered (PUBLIC_BASE_URL), with the provider's answer as received.
      const callbackUrl = new URL(redirectUri());
      callbackUrl.search = new URL(req.originalUrl, callbackUrl).search;
      const user = await withProvider(services, connection, (provider) =>
        redeemCallback(provider, callbackUrl, { ...attempt, state }),
      );
      if (!user.email)
        throw refused(
          "Your identity provider sent no e-mail address: allow the email scope for this client.",
        );
      if (user.emailVerified === false)
        throw refused(`Your identity provider says ${user.email} is not verified.`);
      const domain = emailDomainOf(user.email);
      if (!domain || !connection.emailDomains.includes(domain))
        throw refused(
          `${user.email} may not sign in to this account: single sign-on is open to addresses at ${connection.emailDomains.join(", ")} only.`,
        );
      await openSession(services, res, attempt.accountId, "sso", {
        ssoConnectionAt: connection.createdAt,
        confirm: stillSetUp,
      });
      res.redirect(303, `${services.config.basePath}/dashboard`);
    } catch (err) {
      sendSignInRefusal(services, res, err);
    }
  });

  return router;
}
