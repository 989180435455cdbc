import type { IncomingMessage } from "node:http";
import type { RequestHandler } from "express";
import proxyAddr from "proxy-addr";
import type { Services } from "../services.js";
import { ApiError, type ErrorAnswer, type ErrorCode } from "./errors.js";
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
 * ENDPOINT_LIMITS). A request with an API key is counted by its account's tier, and no request
 * with credentials by the limit on requests without them (anonymous-limit.ts): so one whose key
 * named an account but was made up, wrong, revoked or expired was counted by nothing, and an address could guess keys,
 * the admin key or the metrics token, or make the gateway read the store, at HTTP speed. Only
 * refusals count, after the answer is decided, so good credentials cost nothing more; past the
 * limit every request from that address that carries an API key or an Authorization header
 * (whichever door, good or not) is 429 before they are read, until a slot of the window frees
 * (http/refusal-limit.ts). One per process, held by the app (app.ts) for both of its ways in:
 * express's routes and the keyed lane.
 */
export class RefusedCredentials {
  private readonly limit: RefusalLimit;

  constructor(
    services: Pick<Services, "config" | "store">,
    /** Express's compiled TRUST_PROXY (`app.get("trust proxy fn")`): the lane's address is express's `req.ip`. */
    private readonly trust: (address: string, hop: number) => boolean,
  ) {
    this.limit = new RefusalLimit(
      services,
      "refused-credentials",
      " Check the key or token you send: refused credentials are refused again.",
    );
  }

  /** 429 `rate_limited` for a request with credentials from an address past the limit; costs nothing while no address is. */
  check(req: IncomingMessage): void {
    if (!this.limit.blocking) return;
    if (req.headers["x-api-key"] === undefined && req.headers.authorization === undefined) return;
    this.limit.check(this.addressOf(req));
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

  /** `answer`, counting refused credentials against the client address first (a store that cannot count does not hold the answer back). */
  counting(answer: ErrorAnswer): ErrorAnswer {
    return (err, req, res) => {
      if (!(err instanceof ApiError && REFUSED.has(err.code)) || err.options.malformedKey)
        return answer(err, req, res);
      this.limit
        .count(this.addressOf(req), String(res.locals.requestId ?? ""))
        .catch(() => undefined)
        .finally(() => answer(err, req, res));
    };
  }

  private addressOf(req: IncomingMessage): string {
    return (req as { ip?: string }).ip ?? proxyAddr(req, this.trust);
  }
}
