import type { IncomingMessage } from "node:http";
import type { RequestHandler } from "express";
import proxyAddr from "proxy-addr";
import type { Services } from "../services.js";
import { ApiError, type ErrorAnswer, type ErrorCode } from "./errors.js";
import { RefusalLimit } from "./refusal-limit.js";

/** The answers that refuse a key the request presented: each cost a store lookup, or the admin key's comparison. */
const REFUSED_KEY: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "invalid_api_key",
  "api_key_revoked",
  "api_key_expired",
]);

/**
 * Requests whose API key is refused, per client address (`refused-api-key` in ENDPOINT_LIMITS).
 * A keyed request is counted by its account's tier, and not by the limit on requests without
 * credentials (anonymous-limit.ts): so one whose key is made up, wrong, revoked or expired was
 * counted by nothing, and an address could try keys (the admin key too) or make the gateway read
 * the store at HTTP speed. Only refusals count, after the answer is decided, so a good key costs
 * nothing more; past the limit every request from that address that carries a key (whichever
 * door, good key or not) is 429 before its key is read, until a slot of the window frees
 * (http/refusal-limit.ts). One per process, held by the app (app.ts) for both of its ways in:
 * express's routes and the keyed lane.
 */
export class RefusedKeys {
  private readonly limit: RefusalLimit;

  constructor(
    services: Pick<Services, "config" | "store">,
    /** Express's compiled TRUST_PROXY (`app.get("trust proxy fn")`): the lane's address is express's `req.ip`. */
    private readonly trust: (address: string, hop: number) => boolean,
  ) {
    this.limit = new RefusalLimit(
      services,
      "refused-api-key",
      " Check the API key you send: a refused key is refused again.",
    );
  }

  /** 429 `rate_limited` for a request that carries a key from an address past the limit; costs nothing while no address is. */
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

  /** `answer`, counting a refused key against the client address first (a store that cannot count does not hold the answer back). */
  counting(answer: ErrorAnswer): ErrorAnswer {
    return (err, req, res) => {
      if (!(err instanceof ApiError && REFUSED_KEY.has(err.code))) return answer(err, req, res);
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
