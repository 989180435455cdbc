import type { Router, Request, Response } from "express";
import type { z } from "zod";
import type { Config } from "../config.js";
import type { Services } from "../services.js";
import {
  authenticateAdmin,
  authenticateKey,
  requireUnrestrictedKey,
  type KeyCaller,
} from "./auth.js";
import { ApiError, type ErrorCode } from "./errors.js";
import { enforceEndpointLimit, type EndpointLimitName } from "./endpoint-limits.js";
import { countAnonymously } from "./anonymous-limit.js";
import { sendPage } from "../pages/respond.js";
import { wantsHtml } from "../pages/notice.js";
import { allowOn } from "./method-not-allowed.js";
import { sendJsonText, type HttpResponse } from "./exchange.js";
import { putHeaders } from "./reply-headers.js";
import { caseSensitiveRouter } from "./router.js";

/**
 * A route is data: method, path, who may call it, the zod schemas of its input, and a
 * handler. `mountRoutes` turns the list into express handlers, so authentication and
 * validation are written once, and the same list can describe the API (OpenAPI).
 */
export type Auth = "public" | "key" | "admin";

export interface RouteContext<B, Q, A extends Auth> {
  req: Request;
  res: Response;
  services: Services;
  requestId: string;
  params: Record<string, string>;
  body: B;
  query: Q;
  caller: A extends "key" ? KeyCaller : null;
}

export interface Reply {
  status?: number;
  /** Sent as JSON. */
  body?: unknown;
  /** Already-serialised JSON, sent as is (a worker's answer, a replayed response). */
  raw?: string;
  /** A page for a person (an e-mailed link opened in a browser), sent with the pages' security headers. */
  html?: string;
  /** Text that is not JSON (the Prometheus exposition), with its content type. */
  text?: { contentType: string; body: string };
  headers?: Record<string, string>;
}

export interface RouteDef<B = unknown, Q = unknown, A extends Auth = Auth> {
  method: "get" | "post" | "put" | "patch" | "delete";
  path: string;
  summary: string;
  auth: A;
  /**
   * How a keyed route's caller proves itself when not as its door says (by default the x-api-key
   * header; the dashboard's session): the facilitator also takes a Bearer key and checks its feature.
   */
  authenticate?: CallerAuthenticator;
  body?: z.ZodType<B>;
  query?: z.ZodType<Q>;
  /** The success answer, for the API description (OpenAPI). */
  response?: z.ZodType;
  /**
   * The errors the route answers beyond those of its authentication and input (OpenAPI lists
   * both): a tier's feature, a limited key, a conflict, a purchase's 402…
   */
  errors?: ErrorCode[];
  /** The success answer's media type when it is not JSON (the Prometheus exposition). */
  produces?: string;
  /**
   * A second media type the success answer may take beside JSON (a CSV export, chosen by the
   * query or the Accept header), with the headers it then adds, for the API description.
   */
  alsoProduces?: { mediaType: string; headers: Record<string, { description: string }> };
  /**
   * The operation's security in the API description when its `auth` does not say it (metrics'
   * optional bearer token): OpenAPI security requirements, alternatives.
   */
  security?: Record<string, string[]>[];
  /**
   * Statuses the handler answers with a body of its own rather than the one error shape (the
   * readiness probe's 503), for the API description: each replaces the error entry of its status.
   */
  otherAnswers?: Record<number, { description: string; body: z.ZodType }>;
  /** Status of the success answer (default 200). */
  successStatus?: number;
  /** Another status the same success answer may have, and when (an Idempotency-Key replayed: 200 beside 201). */
  alsoSucceeds?: { status: number; description: string };
  /**
   * For the API description: request headers the route reads beyond the key (an x402 payment), as
   * OpenAPI parameter objects, and headers of the success answer beyond the rate-limit ones (the
   * payment's receipt), as OpenAPI header objects.
   */
  requestHeaders?: Record<string, unknown>[];
  successHeaders?: Record<string, Record<string, unknown>>;
  /** A per-address and per-account limit counted before the handler runs (src/http/endpoint-limits.ts). */
  limit?: EndpointLimitName;
  /**
   * Only a key without account controls may use the route (403 `unrestricted_key_required`,
   * http/auth.ts): checked once the caller is known, before the limit and the body are, so a
   * limited key is told what it may not do rather than what is wrong with what it sent.
   */
  unrestrictedKey?: boolean;
  /**
   * The route counts each request itself (the tool call: a key's admission, a payment's wallet
   * account, and any refusal on the error's way out). Otherwise a request that its authentication
   * did not count against an account's tier (a public or admin route, a dashboard session) is
   * counted by the anonymous limit before the handler runs (http/anonymous-limit.ts).
   */
  countsItself?: boolean;
  /**
   * The route's OpenAPI paths, when the description derived from its schemas does not fit (the
   * tool call is one operation per tool): `{ "/v1/tools/hash": { post: … } }`, full paths.
   */
  document?: (config: DocumentConfig) => Record<string, Record<string, unknown>>;
  /**
   * A route a person opens from an e-mailed link: when their browser asks for HTML, any error the
   * route answers (its query's and its limit's included) is this page instead of the JSON shape.
   * `basePath`: config.basePath, for the page's links.
   */
  errorPage?: (err: ApiError, basePath: string) => string;
  handler(ctx: RouteContext<B, Q, A>): Promise<Reply>;
}

/** What a route's own OpenAPI description may depend on. */
export type DocumentConfig = Pick<Config, "publicBaseUrl" | "creditPriceAtomic" | "apiVersions"> & {
  upstream?: Pick<Config["upstream"], "tools">;
};

/**
 * Any route, whatever its schemas: what lists of routes hold. Each was type-checked against its
 * own schemas by `defineRoute`; the handler is a method, so TypeScript accepts it here.
 */
export type AnyRoute = RouteDef<unknown, unknown, Auth>;

export function defineRoute<B = undefined, Q = undefined, A extends Auth = Auth>(
  def: RouteDef<B, Q, A>,
): RouteDef<B, Q, A> {
  return def;
}

/** 422 `validation_failed` naming the first failing field, as a JSON path. */
export function parseInput<T>(schema: z.ZodType<T>, input: unknown, where: "body" | "query"): T {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  // z.number().int() reports a number past 2^53 against the safe-integer bound first: the
  // field's own bound (`.max(1_000_000_000)`), reported after it, is the one to state.
  const issue =
    result.error.issues.find(
      (i) => !(i.code === "too_big" && i.maximum === Number.MAX_SAFE_INTEGER),
    ) ?? result.error.issues[0]!;
  const path = issue.code === "unrecognized_keys" ? [...issue.path, issue.keys[0]!] : issue.path;
  const param = path.map(String).join(".") || undefined;
  const message =
    issue.code === "unrecognized_keys"
      ? `Unknown field "${param}" in the ${where}.`
      : `Invalid ${where}${param ? ` field "${param}"` : ""}: ${issue.message}.`;
  throw new ApiError("validation_failed", message, { ...(param ? { param } : {}) });
}

/** How a route with `auth: "key"` learns its caller: the x-api-key header by default; the dashboard passes its session. */
export type CallerAuthenticator = (
  services: Services,
  req: Request,
  res: Response,
  requestId: string,
) => Promise<KeyCaller>;

/**
 * The express handler of one route: authentication, limits and validation as the route says,
 * then its handler's reply. `mountPath` is where it is mounted, for the metrics' route label.
 */
export function routeHandler(
  services: Services,
  route: AnyRoute,
  mountPath?: string,
  authenticateCaller: CallerAuthenticator = authenticateKey,
) {
  const pattern = route.path === "/" ? "" : route.path;
  const serve = async (req: Request, res: Response): Promise<void> => {
    const requestId = String(res.locals.requestId);
    res.locals.route = `${mountPath ?? req.baseUrl}${pattern}`; // the pattern, for metrics
    let caller: KeyCaller | null = null;
    if (route.auth === "key")
      caller = await (route.authenticate ?? authenticateCaller)(services, req, res, requestId);
    if (route.unrestrictedKey && caller) requireUnrestrictedKey(caller);
    if (route.auth === "admin") authenticateAdmin(services, req);
    if (!route.countsItself) await countAnonymously(services, req, res);
    if (route.limit)
      await enforceEndpointLimit(services, req, route.limit, caller?.account.id ?? null, requestId);
    // No body (the parser left none) is an empty one; a JSON `null` is a body, and not an object.
    const body = route.body
      ? parseInput(route.body, req.body === undefined ? {} : req.body, "body")
      : undefined;
    const query = route.query ? parseInput(route.query, req.query, "query") : undefined;
    const reply = await route.handler({
      req,
      res,
      services,
      requestId,
      params: req.params as Record<string, string>,
      body,
      query,
      caller,
    });
    sendReply(res, reply);
  };
  const { errorPage } = route;
  if (!errorPage) return serve;
  return async (req: Request, res: Response): Promise<void> => {
    try {
      await serve(req, res);
    } catch (err) {
      if (!(err instanceof ApiError) || !wantsHtml(req)) throw err;
      services.metrics.errors.inc({ code: err.code });
      sendReply(res, {
        status: err.status,
        headers: err.options.headers,
        html: errorPage(err, services.config.basePath),
      });
    }
  };
}

/** Writes a route's reply. */
function sendReply(res: Response, reply: Reply): void {
  writeHead(res, reply);
  if (reply.html !== undefined) sendPage(res, reply.html);
  else if (reply.text !== undefined) res.type(reply.text.contentType).send(reply.text.body);
  else if (reply.raw !== undefined) sendJsonText(res, reply.raw);
  else res.json(reply.body);
}

/** A reply of already-serialised JSON (a tool call's), on Node's API: how the keyed lane answers. */
export function sendRawReply(res: HttpResponse, reply: Reply & { raw: string }): void {
  writeHead(res, reply);
  sendJsonText(res, reply.raw);
}

function writeHead(res: HttpResponse, reply: Reply): void {
  putHeaders(res, reply.headers);
  res.statusCode = reply.status ?? 200;
}

export function mountRoutes(
  services: Services,
  routes: AnyRoute[],
  options: { authenticateCaller?: CallerAuthenticator } = {},
): Router {
  const router = caseSensitiveRouter();
  const methodsByPath = new Map<string, Set<string>>();
  for (const route of routes)
    methodsByPath.set(route.path, (methodsByPath.get(route.path) ?? new Set()).add(route.method));
  // For each pattern, whether a request on it is on a fixed path of the table instead.
  const onFixedPath = fixedPathsOf(routes);
  const ownedElsewhere = new Map(
    [...methodsByPath.keys()].map((path) => [path, onFixedPath(path)]),
  );
  for (const route of routes) {
    const handler = routeHandler(services, route, undefined, options.authenticateCaller);
    const owned = ownedElsewhere.get(route.path);
    if (owned) router[route.method](route.path, skipRouteWhen(owned), handler);
    else router[route.method](route.path, handler);
  }
  // The other methods on these paths are 405, not 404 (answered by `methodNotAllowed`).
  for (const [path, methods] of methodsByPath)
    allowOn(router, path, methods, ownedElsewhere.get(path) ?? undefined);
  return router;
}

/**
 * A fixed path of a table (`/categories`, `/webhooks/register`) is served by its own routes only:
 * a pattern beside it that matches it too (`/:name`, `/webhooks/:id`) neither serves it nor adds
 * to its `Allow`. Such a value is never a name or id (tool names reserve them, ids are generated),
 * so `POST /v1/tools/categories` is 405 `Allow: GET, HEAD, OPTIONS`, not the call of a tool that
 * cannot exist. For a pattern, the test of whether a request's parameters spell such a path; null
 * when none can.
 */
function fixedPathsOf(routes: AnyRoute[]): (pattern: string) => ((req: Request) => boolean) | null {
  const fixed = [...new Set(routes.map((r) => r.path).filter((p) => !p.includes(":")))];
  return (pattern) => {
    if (!pattern.includes(":")) return null;
    const matcher = new RegExp(`^${pattern.replace(/:\w+/g, "[^/]+")}$`);
    const owned = new Set(fixed.filter((path) => matcher.test(path)));
    if (owned.size === 0) return null;
    return (req) =>
      owned.has(pattern.replace(/:(\w+)/g, (_, name: string) => String(req.params[name])));
  };
}

/** Passes a request its route does not serve on to the next route (express's `next("route")`). */
export const skipRouteWhen =
  (skip: (req: Request) => boolean) =>
  (req: Request, _res: Response, next: (to?: "route") => void) =>
    skip(req) ? next("route") : next();
