import type { IncomingMessage } from "node:http";
import type { RequestHandler } from "express";
import { sessionCookieName } from "../dashboard/session.js";
import type { Services } from "../services.js";
import { countedClientAddress, trustProxy, type TrustProxy } from "./client-address.js";
import { ApiError, type ErrorCode } from "./errors.js";
import { showWindow } from "./endpoint-limits.js";
import type { HttpResponse } from "./exchange.js";
import { RefusalLimit } from "./refusal-limit.js";

/**
 * The answers that refuse credentials the request presented: a well-formed API key (unknown,
 * wrong, revoked, expired: each cost a store lookup), the admin key or the metrics token (each a
 * secret's comparison). A key that is not even well-formed is refused before any store work and
 * is a guess of nothing: not counted (`malformedKey`), so a flood of them costs no store write.
 */
const REFUSED: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "invalid_api_key",
  "api_key_revoked",
  "api_key_expired",
  "metrics_token_required",
]);

/**
 * Requests whose credentials are refused, per client address (`refused-credentials` in
 * ENDPOINT_LIMITS). A request a route admits with a key is counted by its account's tier; one
 * whose key named an account but was made up, wrong, revoked or expired, or whose dashboard
 * session cookie named no live session, is counted here (the anonymous limit leaves a request
 * counted here alone: anonymous-limit.ts), so an address cannot guess keys, the admin key or the
 * metrics token, or make the gateway read the store, at HTTP speed. Only refusals count,
 * after the answer is decided, so good credentials cost nothing more; past the limit every
 * request from that address that carries an API key, an Authorization header or a session cookie
 * (whichever door, good or not) is 429 before they are read, until a slot of the window frees
 * (http/refusal-limit.ts). One per process (Services), for express's routes and the keyed lane
 * (their error answers: `countingErrors`, anonymous-limit.ts) and the dashboard's sessions
 * (dashboard/session.ts).
 */
export class RefusedCredentials {
  private readonly limit: RefusalLimit;
  /** TRUST_PROXY, compiled: express is given this very function (app.ts). */
  readonly trust: TrustProxy;
  private readonly sessionCookie: string;

  constructor(services: Pick<Services, "config" | "store">) {
    this.limit = new RefusalLimit(
      services,
      "refused-credentials",
      " Check the key or token you send: refused credentials are refused again.",
    );
    this.trust = trustProxy(services.config.trustProxy);
    this.sessionCookie = `${sessionCookieName(services)}=`;
  }

  /** Whether the request presents credentials: an API key, an Authorization header or a dashboard session cookie. */
  presentsCredentials(req: IncomingMessage): boolean {
    const h = req.headers;
    return Boolean(h["x-api-key"] || h.authorization || h.cookie?.includes(this.sessionCookie));
  }

  /** 429 `rate_limited` for a request with credentials from an address past the limit; costs nothing while no address is. */
  check(req: IncomingMessage): void {
    if (this.limit.blocking && this.presentsCredentials(req))
      this.limit.check(countedClientAddress(req, this.trust));
  }

  /** `check` as express middleware. */
  readonly middleware: RequestHandler = (req, _res, next) => {
    try {
      this.check(req);
      next();
    } catch (err) {
      next(err);
    }
  };

  /**
   * Counts one refusal of `req`'s credentials against its client address, and shows the window on
   * `res`, the refusal's answer (a store that cannot count is let be).
   */
  count(req: IncomingMessage, requestId: string, res?: HttpResponse): Promise<void> {
    return this.limit
      .count(countedClientAddress(req, this.trust), requestId)
      .then((headers) => {
        if (res && !res.headersSent) showWindow(res, headers);
      })
      .catch(() => undefined);
  }

  /** Whether `err` refuses credentials the request presented (not a key that is not even well-formed). */
  refuses(err: unknown): boolean {
    return err instanceof ApiError && REFUSED.has(err.code) && !err.options.malformedKey;
  }
}
