import { createHash } from "node:crypto";
import express, { type Router, type Request, type Response } from "express";
import { parseApiKey } from "../accounts/api-keys.js";
import { authenticate, requireUnrestrictedKey } from "../http/auth.js";
import { ApiError, toApiError } from "../http/errors.js";
import { continueOrRefuse } from "../http/expect-continue.js";
import {
  type EndpointLimitName,
  enforceEndpointLimit,
  withinEndpointLimit,
} from "../http/endpoint-limits.js";
import { esc } from "../pages/respond.js";
import type { Services } from "../services.js";
import { publicDashboardPage, sendDashboardPage } from "./layout.js";
import {
  currentSession,
  endSession,
  newSecret,
  openSession,
  readAccountToken,
  requireCsrf,
  requireSameOrigin,
} from "./session.js";
import { walletSignInSection } from "./wallet-sign-in.js";
import { caseSensitiveRouter } from "../http/router.js";
import { hasBody } from "../http/request-context.js";
import { putHeaders } from "../http/reply-headers.js";

/**
 * Signing in to the dashboard, and out. Four ways in, all ending in the same server-side session:
 * - an API key typed on /dashboard/sign-in (checked by the API's own admission: a revoked or
 *   unknown key is refused with the API's message);
 * - a single-use link e-mailed to the account's address — also the way back in for an account
 *   whose every key is revoked (it can then create a key on the Keys page). The link opens a page
 *   with a button: the token is spent by that POST, not by the GET, so a mail scanner that fetches
 *   links cannot use it up;
 * - a wallet, signing an EIP-4361 message (wallet-sign-in.ts: its own endpoints and script; this
 *   page only shows its section);
 * - single sign-on with the account's OpenID Connect provider (Business): this page's form starts
 *   it, sso-sign-in.ts does the rest.
 * These endpoints are unauthenticated: each POST counts against a per-address limit (and the
 * e-mail one per recipient too, silently), and refuses a cross-site request (login CSRF).
 */
const NOTICES: Record<string, string> = {
  signed_out: "You are signed out.",
  signed_out_everywhere: "You are signed out on every device.",
  expired: "Your session has ended; sign in again.",
  session_key_changed:
    "What you signed in with no longer opens this session (the key was revoked or given limits, or single sign-on was turned off): sign in again.",
};
const LINK_SENT =
  "If an account uses this address, a sign-in link is on its way to it. It works once.";

const FORM_LIMIT = { bytes: 4096, fields: 10 };
const parseForm = express.urlencoded({
  extended: false,
  limit: FORM_LIMIT.bytes,
  parameterLimit: FORM_LIMIT.fields,
});
const sha256 = (value: string) => createHash("sha256").update(value).digest("hex");
const linkNonce = (accountId: string, secret: string) =>
  `dashboard-link:${accountId}:${sha256(secret)}`;
export const field = (req: Request, name: string) =>
  typeof req.body?.[name] === "string" ? (req.body[name] as string).trim() : "";

function signInPage(
  services: Services,
  options: { error?: string; notice?: string; email?: string } = {},
): string {
  const message = options.error
    ? `<p class="notice error" role="alert">${esc(options.error)}</p>`
    : options.notice
      ? `<p class="notice" role="status">${esc(options.notice)}</p>`
      : "";
  return publicDashboardPage({
    basePath: services.config.basePath,
    title: "Sign in to the dashboard",
    body: `${message}
<section aria-labelledby="with-key"><h2 id="with-key">With an API key</h2>
<form method="post" action="${services.config.basePath}/dashboard/sign-in">
<label for="api-key">API key</label><input id="api-key" name="api_key" type="password" autocomplete="off" required spellcheck="false">
<p><button type="submit">Sign in</button></p></form></section>
<section aria-labelledby="with-email"><h2 id="with-email">With a link by e-mail</h2>
<p>We send a sign-in link to your account's e-mail address. Use it too if every key of the account is revoked or lost.</p>
<form method="post" action="${services.config.basePath}/dashboard/sign-in/email">
<label for="email">E-mail address</label><input id="email" name="email" type="email" autocomplete="email" required value="${esc(options.email ?? "")}">
<p><button type="submit">E-mail me a sign-in link</button></p></form></section>
${walletSignInSection(services)}
<section aria-labelledby="with-sso"><h2 id="with-sso">With single sign-on</h2>
<p>Business accounts that use their organisation's identity provider (OpenID Connect).</p>
<form method="post" action="${services.config.basePath}/dashboard/sign-in/sso">
<label for="sso">Work e-mail, its domain, or account ID</label><input id="sso" name="sso" type="text" autocomplete="email" required spellcheck="false">
<p><button type="submit">Sign in with SSO</button></p></form></section>`,
  });
}

/** A refusal (ApiError) shown on the sign-in page with its status; anything else is thrown on. */
export function sendSignInRefusal(services: Services, res: Response, err: unknown): void {
  if (!(err instanceof ApiError)) throw err;
  putHeaders(res, err.options.headers);
  sendDashboardPage(res, signInPage(services, { error: err.message }), err.status);
}

/**
 * A dashboard form's body, parsed; a body that cannot be read becomes a refusal a person can act
 * on, with the status the API would give it (413 too large, 415 an encoding not supported, 400
 * unreadable). The dashboard's forms are small: a larger one is no browser's doing, but the
 * person who sent it is shown the page, not the API's JSON.
 */
function readForm(req: Request, res: Response): Promise<void> {
  // A body of another type (JSON from a script) is refused as such, unread (and not asked for
  // with a 100 Continue), not read as an empty form (which would say "no API key" to a key sent).
  if (hasBody(req) && !req.is("application/x-www-form-urlencoded"))
    return Promise.reject(
      new ApiError(
        "unsupported_media_type",
        "The form must be sent as application/x-www-form-urlencoded, as this page sends it: reload the page and send it again.",
      ),
    );
  const unasked = continueOrRefuse(req, res, FORM_LIMIT.bytes);
  if (unasked) return Promise.reject(formRefusal(unasked));
  return new Promise((resolve, reject) =>
    parseForm(req, res, (err?: unknown) => (err ? reject(formRefusal(err)) : resolve())),
  );
}

function formRefusal(err: unknown): unknown {
  const tooMany = (err as { type?: string }).type === "parameters.too.many";
  const { code, status } = toApiError(err);
  if (status >= 500) return err;
  if (tooMany || code === "body_too_large")
    return new ApiError(
      "body_too_large",
      `The form was too large to read (at most ${FORM_LIMIT.bytes / 1024} KB and ${FORM_LIMIT.fields} fields): reload the page and send it again.`,
    );
  if (code === "unsupported_media_type")
    return new ApiError(
      code,
      "The form's character set or encoding is not supported: reload the page and send it again.",
    );
  return new ApiError(
    code === "invalid_content_encoding" ? code : "bad_request",
    "The form could not be read: reload the page and send it again.",
  );
}

/**
 * A sign-in form's handler, run only for a post from this site, with its body read and the
 * request id; a refusal (ApiError) is shown on the sign-in page with its status. A body that
 * cannot be read counts against the endpoint's `limit` (per address, as the handler would have
 * counted it): an unreadable form is no way around the limit.
 */
export function formRoute(
  services: Services,
  limit: EndpointLimitName,
  handler: (req: Request, res: Response, requestId: string) => Promise<void>,
) {
  return async (req: Request, res: Response) => {
    const requestId = String(res.locals.requestId);
    try {
      requireSameOrigin(req);
      try {
        await readForm(req, res);
      } catch (refusal) {
        await enforceEndpointLimit(services, req, limit, null, requestId);
        throw refusal;
      }
      await handler(req, res, requestId);
    } catch (err) {
      sendSignInRefusal(services, res, err);
    }
  };
}

/**
 * A sign-out form's handler, with its body read. A refusal — the CSRF token of a page opened in a
 * session that has since ended (signed out and in again in another tab), a body that cannot be
 * read — is shown on a page with its status and the way back, not as the API's JSON.
 */
function signOutRoute(
  services: Services,
  handler: (req: Request, res: Response) => Promise<unknown>,
) {
  return async (req: Request, res: Response) => {
    try {
      await readForm(req, res);
      await handler(req, res);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      sendDashboardPage(
        res,
        publicDashboardPage({
          basePath: services.config.basePath,
          title: "Not signed out",
          body: `<p class="notice error" role="alert">${esc(err.message)}</p>
<p><a href="${services.config.basePath}/dashboard">Back to the dashboard</a></p>`,
        }),
        err.status,
      );
    }
  };
}

async function sendSignInLink(services: Services, accountId: string, email: string): Promise<void> {
  const secret = newSecret();
  const { signInLinkMs } = services.config.dashboard;
  await services.store.saveNonce(linkNonce(accountId, secret), signInLinkMs);
  const link = `${services.config.publicBaseUrl}/dashboard/sign-in/link?token=${accountId}.${secret}`;
  await services.mailer.send({
    to: email,
    subject: "Your Toolgate dashboard sign-in link",
    text: `Open this link to sign in to the Toolgate dashboard:\n\n${link}\n\nIt works once, within ${Math.round(signInLinkMs / 60_000)} minutes. If you did not ask for it, ignore this message: nobody can sign in without it.\n`,
  });
}

export function signInRoutes(services: Services): Router {
  const router = caseSensitiveRouter();

  router.get("/dashboard/sign-in", async (req, res) => {
    if (await currentSession(services, req, res))
      return res.redirect(303, `${services.config.basePath}/dashboard`);
    const notice =
      typeof req.query.notice === "string" && Object.hasOwn(NOTICES, req.query.notice)
        ? NOTICES[req.query.notice]
        : undefined;
    sendDashboardPage(res, signInPage(services, { notice }));
  });

  router.post(
    "/dashboard/sign-in",
    formRoute(services, "dashboard-sign-in", async (req, res, requestId) => {
      await enforceEndpointLimit(services, req, "dashboard-sign-in", null, requestId);
      const key = parseApiKey(field(req, "api_key"));
      if (!key)
        throw new ApiError(
          "invalid_api_key",
          "That is not a whole API key: a key is tg_live_, 16 letters or digits, _ and 32 more. Paste all of it.",
        );
      // The API's own check: unknown and revoked keys are refused exactly as /api/v1 refuses them.
      const caller = await authenticate(services, key, requestId);
      // A key with account controls opens no session: the dashboard manages keys and controls.
      requireUnrestrictedKey(caller);
      await openSession(services, res, caller.account.id, "api_key", {
        ...(caller.keyId ? { keyId: caller.keyId } : {}),
      });
      res.redirect(303, `${services.config.basePath}/dashboard`);
    }),
  );

  router.post(
    "/dashboard/sign-in/email",
    formRoute(services, "dashboard-sign-in-link", async (req, res, requestId) => {
      const email = field(req, "email").toLowerCase();
      if (!/^[^\s@]{1,64}@[^\s@]{1,254}$/.test(email))
        throw new ApiError("validation_failed", "Enter the e-mail address of your account.", {
          param: "email",
        });
      await enforceEndpointLimit(services, req, "dashboard-sign-in-link", null, requestId);
      // The same answer whether or not the address has an account, and whether or not its own
      // limit is spent: the form tells no one who has one.
      const forRecipient = await withinEndpointLimit(
        services,
        "dashboard-sign-in-link-recipient",
        `to:${sha256(email)}`,
        requestId,
      );
      const accountId = forRecipient ? await services.store.accountIdByEmail(email) : null;
      const account = accountId ? await services.store.getAccount(accountId) : null;
      if (account?.email === email) {
        // Not awaited: the answer must not wait on the mail server, or its timing would tell
        // who has an account (milliseconds for none, the SMTP exchange for one) and a slow
        // mail server would hold the form.
        void sendSignInLink(services, account.id, email).catch((err: unknown) =>
          services.log.error({ err, account: account.id }, "dashboard sign-in e-mail not sent"),
        );
      }
      sendDashboardPage(res, signInPage(services, { notice: LINK_SENT, email }));
    }),
  );

  router.get("/dashboard/sign-in/link", (req, res) => {
    const token = typeof req.query.token === "string" ? req.query.token.slice(0, 200) : "";
    sendDashboardPage(
      res,
      publicDashboardPage({
        basePath: services.config.basePath,
        title: "Sign in to the dashboard",
        body: `<p>Continue to sign in with the link from your e-mail. It works once.</p>
<form method="post" action="${services.config.basePath}/dashboard/sign-in/link"><input type="hidden" name="token" value="${esc(token)}"><button type="submit">Sign in</button></form>`,
      }),
    );
  });

  router.post(
    "/dashboard/sign-in/link",
    formRoute(services, "dashboard-sign-in", async (req, res, requestId) => {
      await enforceEndpointLimit(services, req, "dashboard-sign-in", null, requestId);
      const token = readAccountToken(field(req, "token"));
      const valid =
        token && (await services.store.consumeNonce(linkNonce(token.accountId, token.secret)));
      if (!token || !valid || !(await services.store.getAccount(token.accountId))) {
        throw new ApiError(
          "invalid_token",
          "This sign-in link does not work: it was used already, has expired, or was copied incompletely. Ask for a new one below.",
          { param: "token" },
        );
      }
      await openSession(services, res, token.accountId, "email_link");
      res.redirect(303, `${services.config.basePath}/dashboard`);
    }),
  );

  router.post(
    "/dashboard/sign-out",
    signOutRoute(services, async (req, res) => {
      // Without a session cookie there is no CSRF token to check, and a cross-site form arrives
      // without one (SameSite=Lax): its answer's cleared cookie still signed the browser out.
      requireSameOrigin(req, "Sign-out forms");
      const current = await currentSession(services, req, res);
      if (current) requireCsrf(req, current.session);
      await endSession(services, req, res);
      res.redirect(303, `${services.config.basePath}/dashboard/sign-in?notice=signed_out`);
    }),
  );

  router.post(
    "/dashboard/sign-out-everywhere",
    signOutRoute(services, async (req, res) => {
      const current = await currentSession(services, req, res);
      if (!current)
        return res.redirect(303, `${services.config.basePath}/dashboard/sign-in?notice=expired`);
      requireCsrf(req, current.session);
      await services.store.endAccountSessions(current.account.id);
      await endSession(services, req, res);
      res.redirect(
        303,
        `${services.config.basePath}/dashboard/sign-in?notice=signed_out_everywhere`,
      );
    }),
  );

  return router;
}
