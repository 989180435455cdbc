import type { Request, RequestHandler, Router } from "express";
import { ApiError } from "./errors.js";
import { shownPath } from "./logged-path.js";
import type { Redactor } from "../lib/redact.js";

/**
 * A known path asked with a method it does not serve is answered 405 `method_not_allowed` with
 * an `Allow` header (RFC 9110 §15.5.6), not 404. Each table of routes records, after its routes,
 * which methods each of its paths serves (`allowOn`), so express's own path matching decides
 * which paths are known; `methodNotAllowed`, just before the 404, answers for any path a route
 * recognised. OPTIONS (CORS) is served on every path; HEAD wherever GET is.
 */
const ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/**
 * Records, for requests on `path`, that it serves `methods`; except a request `unless` says is on
 * another route's path (a pattern's match that a fixed path of the same table owns).
 */
export function allowOn(
  router: Router,
  path: string | string[],
  methods: Iterable<string>,
  unless?: (req: Request) => boolean,
): void {
  const upper = [...methods].map((m) => m.toUpperCase());
  router.all(path, (req, res, next) => {
    if (unless?.(req)) return next();
    const allow: Set<string> = (res.locals.allowedMethods ??= new Set<string>());
    for (const method of upper) allow.add(method);
    if (allow.has("GET")) allow.add("HEAD");
    allow.add("OPTIONS");
    // The pattern, mount prefix included, for the metrics' label of the 405 (by the time the
    // error handler answers it, express has taken the prefix off req.baseUrl): of a list of
    // fixed paths, the one asked.
    const own = Array.isArray(path) ? (path.includes(req.path) ? req.path : null) : path;
    if (own !== null) res.locals.route ??= `${req.baseUrl}${own === "/" ? "" : own}` || "/";
    next();
  });
}

/** The 405 of a known path; the path it repeats is bounded and redacted (`shownPath`). */
export function methodNotAllowed(redactSecrets: Redactor): RequestHandler {
  return (req, res, next) => {
    const allowed = res.locals.allowedMethods as Set<string> | undefined;
    if (!allowed) return next();
    const allow = ORDER.filter((m) => allowed.has(m)).join(", ");
    next(
      new ApiError(
        "method_not_allowed",
        `${req.method} is not allowed on ${shownPath(req.originalUrl, redactSecrets)}; it serves ${allow}.`,
        { headers: { Allow: allow } },
      ),
    );
  };
}
