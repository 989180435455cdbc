import type { IncomingMessage } from "node:http";
import type { Request, RequestHandler, Response } from "express";
import { carriesPayment } from "../payments/wire.js";
import { renderNotice, wantsHtml } from "../pages/notice.js";
import { sendPage } from "../pages/respond.js";
import type { Services } from "../services.js";
import { countedClientAddress } from "./client-address.js";
import { ApiError, type ErrorAnswer } from "./errors.js";
import type { HttpRequest, HttpResponse } from "./exchange.js";
import { putHeaders } from "./reply-headers.js";
import {
  countEndpointUse,
  countedByALimiter,
  endpointLimitRefusal,
  endpointWindowHeaders,
  showWindow,
} from "./endpoint-limits.js";

/**
 * The one rule: every request is counted by a limiter, and its answer shows that limiter's window
 * (RateLimit-*). A request a route admits with a key (or a verified payment's wallet) is counted
 * by the account's tier; one whose key or session is refused, by `refused-credentials`; one whose
 * x402 payment is refused, by `x402-refused`. Every other request — whatever headers it carries:
 * a junk `Authorization`, a key sent to a route that never reads it, a payment header on a page —
 * is counted by one limit per client address (`anonymous` in ENDPOINT_LIMITS).
 *
 * When: a request with no credentials and no payment cannot be admitted by anything, so it is
 * counted here, first (but where `countedByItsDoor` says its door counts it, as MCP does). A request with them is counted where its fate is known, without a store
 * round trip of its own when it is admitted (the keyed tool call keeps its one round trip):
 * before the handler of a route that does not admit callers (`countAnonymously`: public, admin and
 * dashboard-session routes, the pages, the dashboard), or on the way out of an error that no
 * limiter counted (`countingErrors`: a missing or malformed key, a junk payment header, a 404).
 * Past the limit, such a request is answered the anonymous 429 instead.
 *
 * When the store cannot count, the request goes through: `/healthz` and the status page must
 * answer in a store outage.
 */
export function anonymousLimit(
  services: Services,
  countedByItsDoor: (req: Request) => boolean = () => false,
): RequestHandler {
  return (req, res, next) => {
    if (
      !(services.refusedCredentials.presentsCredentials(req) || carriesPayment(req.headers)) &&
      !countedByItsDoor(req)
    ) {
      countAnonymously(services, req, res).then(
        () => next(),
        (err) => answerBrowser(services, req, res, err) || next(err),
      );
      return;
    }
    // Whatever door this ends up at, it is counted: a door that forgot (none should) is counted
    // once it has answered, so the address's next requests see it.
    res.once("finish", () => {
      if (!countedByALimiter(res)) void countAnonymously(services, req, res).catch(() => undefined);
    });
    next();
  };
}

/**
 * Counts the request against its client address's anonymous limit, unless a limiter counted it
 * already; 429 `rate_limited` past the limit. The window is shown on the answer.
 */
export async function countAnonymously(
  services: Services,
  req: IncomingMessage,
  res: HttpResponse,
): Promise<void> {
  const refusal = await anonymousRefusal(services, req, res);
  if (refusal) throw refusal;
}

/** `countAnonymously` as express middleware, for a door that admits no caller (app.ts). */
export const countingAnonymously =
  (services: Services): RequestHandler =>
  (req, res, next) => {
    countAnonymously(services, req, res).then(
      () => next(),
      (err) => answerBrowser(services, req, res, err) || next(err),
    );
  };

/**
 * A person's browser past the limit — a page opened, a sign-in form sent — is shown a page that
 * says so, as every page and form answers its refusals, not the API's JSON: people behind one
 * office or campus address share its limit. Whether it did.
 */
function answerBrowser(services: Services, req: Request, res: Response, err: unknown): boolean {
  const browsing =
    req.method === "GET" ||
    req.method === "HEAD" ||
    typeof req.is(["application/x-www-form-urlencoded", "multipart/form-data"]) === "string";
  if (!(err instanceof ApiError) || !browsing || !wantsHtml(req)) return false;
  services.metrics.errors.inc({ code: err.code });
  putHeaders(res, err.options.headers);
  res.status(err.status);
  const wait = err.options.headers?.["Retry-After"];
  sendPage(
    res,
    renderNotice({
      ok: false,
      basePath: services.config.basePath,
      title: "Too many requests",
      message: `${err.message}${wait ? ` Try again in ${wait} s.` : ""}`,
    }),
  );
  return true;
}

/** Counts as `countAnonymously` does; the 429 to answer instead, if the address is past its limit. */
async function anonymousRefusal(
  services: Services,
  req: IncomingMessage,
  res: HttpResponse,
): Promise<ApiError | null> {
  if (countedByALimiter(res) || res.headersSent) return null;
  const address = countedClientAddress(req, services.refusedCredentials.trust);
  let hit;
  try {
    hit = await countEndpointUse(
      services,
      "anonymous",
      `ip:${address}`,
      String(res.locals.requestId ?? ""),
    );
  } catch {
    return null;
  }
  if (!hit.allowed)
    return endpointLimitRefusal(services, "anonymous", "client address", hit.resetMs);
  showWindow(res, endpointWindowHeaders(services, "anonymous", hit));
  return null;
}

/**
 * `answer`, after counting the request the error answers: refused credentials against
 * `refused-credentials` (http/refused-credentials.ts), any other request no limiter counted
 * against the anonymous limit — whose 429 is answered instead once the address is past it. Shared
 * by express's routes and the keyed lane (app.ts): the keyed call's errors are counted here, its
 * successes never come here.
 */
export function countingErrors(services: Services, answer: ErrorAnswer): ErrorAnswer {
  const { refusedCredentials } = services;
  return (err, req, res) => {
    if (res.headersSent) return answer(err, req, res);
    // Refused credentials are always counted as such, even on a route that counted the request
    // per address first (the metrics token on /metrics): that limit is what holds a guesser.
    if (refusedCredentials.refuses(err)) {
      void refusedCredentials
        .count(req, String(res.locals.requestId ?? ""), res)
        .then(() => answer(err, req, res));
      return;
    }
    if (countedByALimiter(res, err)) return answer(err, req, res);
    void anonymousRefusal(services, req, res).then((refusal) =>
      answer(refusal ?? err, req as HttpRequest, res),
    );
  };
}
