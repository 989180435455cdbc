import { createHash, randomBytes } from "node:crypto";
import { parseCookie, stringifySetCookie } from "cookie";
import type { Request, Response } from "express";
import type { KeyCaller } from "../http/auth.js";
import { ApiError } from "../http/errors.js";
import { ACCOUNT_ID_PATTERN } from "../lib/ids.js";
import { sameSecret } from "../lib/same-secret.js";
import type { Services } from "../services.js";
import {
  type AccountRecord,
  isLimitedKey,
  isRevoked,
  type KeyRecord,
  type SessionRecord,
} from "../store/types.js";

/**
 * Dashboard sessions: server-side records in the store (Redis, shared by every gateway process),
 * named by an HttpOnly cookie `<account id>.<secret>`. Only the secret's SHA-256 is stored, so a
 * store dump opens no session; the account id in the cookie keeps every session key in its
 * account's slot, and lets "sign out everywhere" end them all with one write. The cookie is
 * `SameSite=Lax` and, in production, `Secure` with the `__Host-` prefix (bound to this host, path /).
 * A session opened with an API key lasts only while that key could open it: revoking the key, or
 * giving it controls, ends the session at its next use (every process reads the key's record).
 *
 * A session authenticates the dashboard's pages and its copy of the account API under
 * /dashboard/api/v1 — never /v1/tools, /mcp or /api/v1, which take `x-api-key` only. Every
 * state-changing request carries the session's CSRF token (header `x-csrf-token`, or form field
 * `_csrf`), compared in constant time: a cross-site form or fetch cannot know it.
 */
export const CSRF_HEADER = "x-csrf-token";

/** A secret of 32 random bytes, as the session cookie and the e-mailed sign-in link carry it. */
export const newSecret = (): string => randomBytes(32).toString("base64url");

/** `<account id>.<secret>` (a session cookie, a sign-in link's token), when well-formed. */
export function readAccountToken(token: string): { accountId: string; secret: string } | null {
  const [accountId = "", secret = "", ...rest] = token.split(".");
  if (rest.length > 0 || !ACCOUNT_ID_PATTERN.test(accountId) || !/^[A-Za-z0-9_-]{43}$/.test(secret))
    return null;
  return { accountId, secret };
}

/** The dashboard session's cookie (`__Host-` in production: HTTPS only, this host only). */
export const sessionCookieName = (services: Pick<Services, "config">) =>
  services.config.env === "production" ? "__Host-tg_session" : "tg_session";
const sha256 = (value: string) => createHash("sha256").update(value).digest("hex");

export interface DashboardSession {
  session: SessionRecord;
  account: AccountRecord;
}

/**
 * Opens a session for the account and sets its cookie on the answer. `keyId`: the key it was
 * opened with; `ssoConnectionAt`: the single sign-on connection it was opened under (each ends
 * the session when it no longer holds). `confirm`, run once the session exists, may still refuse
 * it (then it is ended, and no cookie is set): what allowed it may have been withdrawn meanwhile.
 */
export async function openSession(
  services: Services,
  res: Response,
  accountId: string,
  via: SessionRecord["via"],
  {
    keyId,
    ssoConnectionAt,
    confirm,
  }: { keyId?: string; ssoConnectionAt?: number; confirm?: () => Promise<unknown> } = {},
): Promise<void> {
  const secret = newSecret();
  const now = Date.now();
  const { sessionIdleMs, sessionMaxMs } = services.config.dashboard;
  const id = sha256(secret);
  await services.store.createSession(
    {
      id,
      accountId,
      csrfToken: newSecret(),
      createdAt: now,
      expiresAt: now + sessionMaxMs,
      via,
      ...(keyId ? { keyId } : {}),
      ...(ssoConnectionAt ? { ssoConnectionAt } : {}),
    },
    sessionIdleMs,
  );
  try {
    await confirm?.();
  } catch (err) {
    await services.store.endSession(accountId, id);
    throw err;
  }
  res.append(
    "Set-Cookie",
    sessionCookie(services, `${accountId}.${secret}`, Math.floor(sessionMaxMs / 1000)),
  );
}

function sessionCookie(services: Services, value: string, maxAgeSeconds: number): string {
  const production = services.config.env === "production";
  return stringifySetCookie({
    name: sessionCookieName(services),
    value,
    httpOnly: true,
    secure: production,
    sameSite: "lax",
    path: "/",
    maxAge: maxAgeSeconds,
  });
}

/** The cookie's account id and secret, when it is well-formed. */
function presentedSession(
  services: Services,
  req: Request,
): { accountId: string; id: string } | null {
  const value = parseCookie(req.get("cookie") ?? "")[sessionCookieName(services)];
  const token = readAccountToken(value ?? "");
  return token ? { accountId: token.accountId, id: sha256(token.secret) } : null;
}

/**
 * The live session this request presents (its idle expiry pushed back), or null. A cookie that
 * names no live session (ended, expired, made up) is cleared, so a browser sends it no more, and
 * counted as refused credentials against the client address (http/refused-credentials.ts): each
 * cost a store read, and a script that keeps sending made-up ones is held like one guessing keys.
 */
export async function currentSession(
  services: Services,
  req: Request,
  res: Response,
): Promise<DashboardSession | null> {
  const presented = presentedSession(services, req);
  if (!presented) return null;
  const live = await liveSession(services, presented, services.config.dashboard.sessionIdleMs);
  if (live) return live;
  clearSessionCookie(services, res);
  await services.refusedCredentials.count(req, String(res.locals.requestId ?? ""), res);
  return null;
}

/**
 * The session if it is still live, read without counting as use (a live feed held open): its idle
 * expiry stays where the last request put it.
 */
export async function stillLive(
  services: Services,
  session: SessionRecord,
): Promise<DashboardSession | null> {
  return liveSession(services, session, null);
}

async function liveSession(
  services: Services,
  { accountId, id }: { accountId: string; id: string },
  idleMs: number | null,
): Promise<DashboardSession | null> {
  const session = await services.store.touchSession(accountId, id, idleMs);
  if (!session) return null;
  const [account, key, sso] = await Promise.all([
    services.store.getAccount(session.accountId),
    session.keyId ? services.store.getKey(session.accountId, session.keyId) : null,
    session.via === "sso" ? services.store.getSsoConnection(session.accountId) : null,
  ]);
  // A session opened with a key lasts while that key could open it; one opened by single sign-on
  // while the connection it came through is the account's: not removed (as when the account is
  // taken back) nor set up anew, though its settings may change.
  const withdrawn =
    (session.keyId && !(key && couldOpenSession(key))) ||
    (session.via === "sso" && (!sso || sso.createdAt !== ssoConnectionOf(session, sso)));
  if (withdrawn) {
    await services.store.endSession(session.accountId, session.id);
    return null;
  }
  return account ? { session, account } : null;
}

/**
 * The connection a single sign-on session was opened under. A session opened by a release before
 * sessions recorded it (no `ssoConnectionAt`; a rolling upgrade serves those beside new ones) was
 * opened under the connection that was the account's then: the current one if that was set up
 * before the session opened, else one since removed. (With no connection left, every single
 * sign-on session has ended.)
 */
function ssoConnectionOf(
  session: SessionRecord,
  current: { createdAt: number },
): number | undefined {
  if (session.ssoConnectionAt !== undefined) return session.ssoConnectionAt;
  return current.createdAt <= session.createdAt ? current.createdAt : undefined;
}

/** Whether a key could open a session now: not revoked (past any rotation grace), no controls. */
function couldOpenSession(key: KeyRecord): boolean {
  return !isRevoked(key) && !isLimitedKey(key);
}

/** 403 `csrf_failed` unless the request carries the session's CSRF token. */
export function requireCsrf(req: Request, session: SessionRecord): void {
  const given =
    req.get(CSRF_HEADER) ?? (typeof req.body?._csrf === "string" ? (req.body._csrf as string) : "");
  if (!given || !sameSecret(given, session.csrfToken))
    throw new ApiError(
      "csrf_failed",
      "This request is missing the dashboard's CSRF token: reload the page and try again.",
    );
}

/** Ends this request's session (if any) and clears its cookie. */
export async function endSession(services: Services, req: Request, res: Response): Promise<void> {
  const presented = presentedSession(services, req);
  if (presented) await services.store.endSession(presented.accountId, presented.id);
  clearSessionCookie(services, res);
}

/** Tells the browser to forget its session cookie, once per answer however many steps find it dead. */
function clearSessionCookie(services: Services, res: Response): void {
  const cleared = sessionCookie(services, "", 0);
  const set = res.getHeader("Set-Cookie");
  if (set === cleared || (Array.isArray(set) && set.includes(cleared))) return;
  res.append("Set-Cookie", cleared);
}

/**
 * The caller of a dashboard API request: the session's account (401 `session_required`
 * without one), after the CSRF check for anything but a read.
 */
export async function authenticateSession(
  services: Services,
  req: Request,
  res: Response,
): Promise<KeyCaller> {
  const current = await currentSession(services, req, res);
  if (!current)
    throw new ApiError("session_required", "Sign in to the dashboard first (/dashboard/sign-in).");
  if (!["GET", "HEAD", "OPTIONS"].includes(req.method)) requireCsrf(req, current.session);
  res.locals.accountId = current.account.id;
  // A session is opened only with a key without controls, or an e-mailed link: it manages everything.
  return {
    account: current.account,
    keyId: null,
    sessionId: current.session.id,
    keyLimited: false,
  };
}

/**
 * Refuses a form posted from another site (login or logout CSRF): the browser says where the
 * request comes from. `forms` names them in the refusal.
 */
export function requireSameOrigin(req: Request, forms = "Sign-in forms"): void {
  const site = req.get("sec-fetch-site");
  const origin = req.get("origin");
  // Without Sec-Fetch-Site (an older browser), the Origin decides; "null" is what a sandboxed
  // frame or a data: page sends, the very forms this refuses. A client sending neither is no browser.
  const crossSite = site
    ? site !== "same-origin"
    : origin !== undefined && URL.parse(origin)?.host !== req.get("host");
  if (crossSite)
    throw new ApiError("csrf_failed", `${forms} are accepted from this site's own pages only.`);
}
