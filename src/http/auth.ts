import type { Request, Response } from "express";
import type { IncomingMessage } from "node:http";
import { headerOf } from "./exchange.js";
import { sameSecret } from "../lib/same-secret.js";
import { parseApiKey } from "../accounts/api-keys.js";
import type { Services } from "../services.js";
import {
  type AccountRecord,
  type AdmitOutcome,
  isRevoked,
  type RateState,
} from "../store/types.js";
import { ApiError } from "./errors.js";
import { windowHeaders } from "./endpoint-limits.js";

export interface KeyCaller {
  account: AccountRecord;
  keyId: string | null;
  /** The dashboard session the request came with (its caller has no key of its own). */
  sessionId?: string;
  /**
   * The request came with a key that has account controls (expiry, tools, budget): it may call
   * tools within them and read the account, but not manage keys or controls — else it could lift
   * its own limits, or issue itself a key without them.
   */
  keyLimited: boolean;
}

/** 403 `unrestricted_key_required` for a caller whose key has account controls. */
export function requireUnrestrictedKey(caller: KeyCaller): void {
  if (caller.keyLimited)
    throw new ApiError(
      "unrestricted_key_required",
      "This API key has account controls (an expiry, allowed tools or a budget): it cannot manage keys or controls, webhooks or custom tools, nor buy a plan or settle as a facilitator. Use a key without controls, or the dashboard.",
    );
}

/**
 * The refusal for a request whose credential has ended since it was admitted (its key revoked,
 * its dashboard session ended), or null while it holds. Taking an account back
 * (dashboard/reclaim.ts) revokes every key and ends every session, while a write authenticated
 * before may still be on its way, held up by a step its sender controls (an SSO provider's
 * discovery, a DNS lookup): it must not land after and keep a way in.
 */
async function endedCredential(services: Services, caller: KeyCaller): Promise<ApiError | null> {
  const { store } = services;
  const accountId = caller.account.id;
  if (caller.sessionId)
    return (await store.touchSession(accountId, caller.sessionId, null))
      ? null
      : new ApiError(
          "session_required",
          "The dashboard session ended while the request ran; nothing was changed.",
        );
  if (!caller.keyId) return null;
  const key = await store.getKey(accountId, caller.keyId);
  return key && !isRevoked(key)
    ? null
    : new ApiError(
        "api_key_revoked",
        "The API key was revoked while the request ran; nothing was changed.",
      );
}

/** Before a write that followed a slow step: refuses if the request's credential has ended meanwhile. */
export async function requireCredentialHolds(services: Services, caller: KeyCaller): Promise<void> {
  const ended = await endedCredential(services, caller);
  if (ended) throw ended;
}

/**
 * After a write that could leave a way in: keeps it only if the request's credential still holds,
 * else undoes it and refuses. The take-back, which removes what it finds after ending the
 * credentials, finds what landed before; this finds the rest.
 */
export async function keepIfCredentialHolds(
  services: Services,
  caller: KeyCaller,
  undo: () => Promise<unknown>,
): Promise<void> {
  const ended = await endedCredential(services, caller);
  if (!ended) return;
  await undo();
  throw ended;
}

/**
 * Rate-limit headers on every keyed answer (draft-ietf-httpapi-ratelimit-headers-06, as
 * `windowHeaders` writes them). None for an admission that counted nothing (its door counted the
 * request, and states the window itself): its `remaining` is -1, "not read", which a client must
 * never see as "over the limit".
 */
export function rateLimitHeaders(rate: RateState): Record<string, string> {
  if (rate.remaining < 0) return {};
  return windowHeaders(rate, 60);
}

/**
 * A Toolgate key sent as `Authorization: Bearer tg_…` (what many HTTP clients send by default) is
 * read as the `x-api-key` header, for every door: without this, a keyed caller using it on a tool
 * call was served as keyless, and offered (and, with an x402 client, made) a payment. So is one
 * sent in `Authorization` without the scheme (`Authorization: tg_…`): plainly meant as the key, and
 * never to be answered with a payment offer. Applied to every request first (app.ts); a token
 * that is not a Toolgate key is left alone.
 */
export function bearerKeyAsApiKey(req: IncomingMessage): void {
  // An empty x-api-key (a client whose variable is unset) is no key, and does not hide the bearer.
  if (req.headers["x-api-key"]) return;
  const authorization = req.headers.authorization;
  if (authorization === undefined || !TOOLGATE_AUTHORIZATION.test(authorization)) return;
  req.headers["x-api-key"] = authorization.replace(/^bearer\s+/i, "").trim();
}
const TOOLGATE_AUTHORIZATION = /^(?:bearer\s+)?tg_/i;

/** Why a key is not even well-formed, in words that say what to send instead. */
function malformedKeyMessage(header: string): string {
  if (/^bearer\s/i.test(header))
    return 'The API key is not valid: send the key alone in x-api-key, without "Bearer " (or send it as Authorization: Bearer <key>).';
  if (header.startsWith("tg_"))
    return "The API key is not valid: it is cut short or altered (a key is tg_live_, 16 letters and digits, _, then 32 more); copy it again whole.";
  return "The API key is not valid: a Toolgate API key looks like tg_live_… (sign up with POST /api/v1/signup, or create one on the dashboard's Keys page).";
}

/** The key in `x-api-key`, well-formed, or a 401 before any store work. */
export function presentedKey(
  req: Pick<IncomingMessage, "headers">,
  options: { bearer?: boolean } = {},
): { accountId: string; hash: string } {
  // The x402 facilitator API also takes `Authorization: Bearer <key>`, what the official
  // middlewares' `createAuthHeaders` is usually written to send.
  const bearer = options.bearer
    ? /^Bearer\s+(\S+)\s*$/i.exec(headerOf(req, "authorization") ?? "")?.[1]
    : undefined;
  const header = headerOf(req, "x-api-key") ?? bearer;
  if (!header)
    throw new ApiError(
      "missing_api_key",
      options.bearer
        ? "Send your API key in the x-api-key header or as Authorization: Bearer <key>."
        : "Send your API key in the x-api-key header.",
    );
  const parsed = parseApiKey(header.trim());
  if (!parsed)
    throw new ApiError("invalid_api_key", malformedKeyMessage(header.trim()), {
      malformedKey: true,
    });
  return parsed;
}

export interface Admitted extends KeyCaller {
  charged: boolean;
  /** Rate-limit headers for the answer. */
  headers: Record<string, string>;
}

/** Turns an admission outcome into the caller, or the matching 401 / 402 / 429 (with its headers). */
export function admitted(outcome: AdmitOutcome): Admitted {
  switch (outcome.status) {
    case "invalid_key":
      throw new ApiError("invalid_api_key", "The API key is not valid.");
    case "revoked":
      throw new ApiError("api_key_revoked", "The API key has been revoked.");
    case "expired":
      throw new ApiError(
        "api_key_expired",
        `The API key expired at ${new Date(outcome.expiresAt).toISOString()}.`,
        { details: { expired_at: new Date(outcome.expiresAt).toISOString() } },
      );
    case "tool_not_allowed":
      throw new ApiError(
        "tool_not_allowed",
        `This API key may call only these tools: ${outcome.allowedTools.join(", ")}.`,
        { details: { allowed_tools: outcome.allowedTools } },
      );
    case "key_budget_exceeded": {
      const { budget } = outcome;
      const resetsAt = new Date(budget.resetsAt).toISOString();
      throw new ApiError(
        "key_budget_exceeded",
        `This call would take the API key past its budget of ${budget.credits} credits per ${budget.period} (${budget.spent} spent); nothing was charged. The budget resets at ${resetsAt}.`,
        {
          headers: rateLimitHeaders(outcome.rate),
          details: {
            budget: {
              credits: budget.credits,
              period: budget.period,
              spent: budget.spent,
              resets_at: resetsAt,
            },
          },
        },
      );
    }
    case "rate_limited": {
      const retryAfter = String(Math.max(1, Math.ceil(outcome.rate.resetMs / 1000)));
      throw new ApiError(
        "rate_limited",
        `Rate limit of ${outcome.rate.limit} requests per minute exceeded; retry after ${retryAfter} s.`,
        {
          headers: { ...rateLimitHeaders(outcome.rate), "Retry-After": retryAfter },
        },
      );
    }
    case "insufficient_credits":
      throw new ApiError(
        "insufficient_credits",
        `Not enough credits: the balance is ${outcome.account.balance}.`,
        {
          headers: rateLimitHeaders(outcome.rate),
          details: { credits_remaining: outcome.account.balance },
        },
      );
    case "ok":
      return {
        account: outcome.account,
        keyId: outcome.keyId,
        keyLimited: outcome.keyLimited,
        charged: outcome.charged,
        headers: rateLimitHeaders(outcome.rate),
      };
  }
}

/** Checks the key and counts the request against the account's rate limit, charging nothing: one round trip. */
export async function authenticate(
  services: Services,
  key: { accountId: string; hash: string | null },
  requestId: string,
): Promise<Admitted> {
  return admitted(
    await services.store.admit({
      accountId: key.accountId,
      keyHash: key.hash,
      cost: 0,
      requestId,
      tool: null,
      reason: "",
    }),
  );
}

/**
 * A public route's optional key (the tool catalogue's): the account of one that was sent, checked
 * as any key is (a bad or revoked one is 401, a good one counts against its account), else null.
 */
export async function optionalKeyAccount(
  services: Services,
  req: Request,
  res: Response,
  requestId: string,
): Promise<AccountRecord | null> {
  if (!req.get("x-api-key")) return null;
  return (await authenticateKey(services, req, res, requestId)).account;
}

/** The route-level form: authenticates the request's key and puts the rate-limit headers on the answer. */
export async function authenticateKey(
  services: Services,
  req: Request,
  res: Response,
  requestId: string,
): Promise<KeyCaller> {
  const caller = await authenticate(services, presentedKey(req), requestId);
  for (const [name, value] of Object.entries(caller.headers)) res.setHeader(name, value);
  res.locals.accountId = caller.account.id;
  return { account: caller.account, keyId: caller.keyId, keyLimited: caller.keyLimited };
}

/** The operator's key (ADMIN_API_KEY), compared in constant time. */
export function authenticateAdmin(services: Services, req: Request): void {
  const header = req.get("x-api-key");
  if (!header) throw new ApiError("missing_api_key", "Send the admin key in the x-api-key header.");
  const expected = services.config.adminApiKey;
  if (expected && sameSecret(header.trim(), expected)) return;
  if (parseApiKey(header.trim()))
    throw new ApiError("admin_required", "This endpoint needs the operator's admin key.");
  throw new ApiError("invalid_api_key", "The API key is not valid.");
}
