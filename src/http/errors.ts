import type { ErrorRequestHandler, RequestHandler } from "express";
import type { Logger } from "pino";
import { BooksUnavailableError } from "../books/errors.js";
import { StoreUnavailableError } from "../store/errors.js";
import { sendJson, type HttpRequest, type HttpResponse } from "./exchange.js";
import { pathForLog, shownPath } from "./logged-path.js";
import { putHeaders } from "./reply-headers.js";
import { renderNotice, wantsHtml } from "../pages/notice.js";
import { sendPage } from "../pages/respond.js";
import type { Redactor } from "../lib/redact.js";

/**
 * Every error the API can answer, in one table: the stable `code` a client branches on,
 * its HTTP status and its `type` (the family, as in Stripe's API). Nothing else in the
 * code base picks a status for an error.
 */
export const ERRORS = {
  invalid_json: { status: 400, type: "invalid_request_error" },
  invalid_path: { status: 400, type: "invalid_request_error" },
  invalid_content_encoding: { status: 400, type: "invalid_request_error" },
  bad_request: { status: 400, type: "invalid_request_error" },
  method_not_allowed: { status: 405, type: "invalid_request_error" },
  request_timeout: { status: 408, type: "invalid_request_error" },
  headers_too_large: { status: 431, type: "invalid_request_error" },
  unsupported_media_type: { status: 415, type: "invalid_request_error" },
  expectation_failed: { status: 417, type: "invalid_request_error" },
  validation_failed: { status: 422, type: "invalid_request_error" },
  missing_api_key: { status: 401, type: "authentication_error" },
  invalid_api_key: { status: 401, type: "authentication_error" },
  api_key_revoked: { status: 401, type: "authentication_error" },
  api_key_expired: { status: 401, type: "authentication_error" },
  invalid_token: { status: 400, type: "invalid_request_error" },
  sso_sign_in_failed: { status: 401, type: "authentication_error" },
  session_required: { status: 401, type: "authentication_error" },
  metrics_token_required: { status: 401, type: "authentication_error" },
  csrf_failed: { status: 403, type: "permission_error" },
  insufficient_credits: { status: 402, type: "payment_error" },
  key_budget_exceeded: { status: 402, type: "payment_error" },
  payment_required: { status: 402, type: "payment_error" },
  payment_invalid: { status: 402, type: "payment_error" },
  payment_already_used: { status: 409, type: "payment_error" },
  payment_pending: { status: 503, type: "payment_error" },
  chain_unavailable: { status: 503, type: "api_error" },
  feature_not_in_tier: { status: 403, type: "permission_error" },
  admin_required: { status: 403, type: "permission_error" },
  tool_not_allowed: { status: 403, type: "permission_error" },
  unrestricted_key_required: { status: 403, type: "permission_error" },
  host_not_allowed: { status: 403, type: "permission_error" },
  not_found: { status: 404, type: "invalid_request_error" },
  tool_not_found: { status: 404, type: "invalid_request_error" },
  route_not_found: { status: 404, type: "invalid_request_error" },
  version_retired: { status: 410, type: "invalid_request_error" },
  email_taken: { status: 409, type: "invalid_request_error" },
  tool_name_taken: { status: 409, type: "invalid_request_error" },
  last_active_key: { status: 409, type: "invalid_request_error" },
  key_already_rotated: { status: 409, type: "invalid_request_error" },
  plan_not_purchasable: { status: 409, type: "invalid_request_error" },
  sso_domain_taken: { status: 409, type: "invalid_request_error" },
  secret_rotation_in_progress: { status: 409, type: "invalid_request_error" },
  invalid_cursor: { status: 400, type: "invalid_request_error" },
  unknown_tool_name: { status: 400, type: "invalid_request_error" },
  invalid_range: { status: 400, type: "invalid_request_error" },
  idempotency_conflict: { status: 409, type: "invalid_request_error" },
  idempotency_answer_not_kept: { status: 409, type: "invalid_request_error" },
  body_too_large: { status: 413, type: "invalid_request_error" },
  body_too_deep: { status: 413, type: "invalid_request_error" },
  rate_limited: { status: 429, type: "rate_limit_error" },
  internal_error: { status: 500, type: "api_error" },
  payments_not_enabled: { status: 501, type: "api_error" },
  analytics_not_enabled: { status: 501, type: "api_error" },
  store_unavailable: { status: 503, type: "api_error" },
  books_unavailable: { status: 503, type: "api_error" },
  sso_provider_unavailable: { status: 502, type: "api_error" },
  tool_failed: { status: 502, type: "tool_error" },
  tool_timeout: { status: 504, type: "tool_error" },
  tool_unavailable: { status: 503, type: "tool_error" },
  worker_unavailable: { status: 503, type: "api_error" },
  worker_pool_busy: { status: 503, type: "api_error" },
  shutting_down: { status: 503, type: "api_error" },
  // The load balancer's own answers (deploy/haproxy.cfg), never the gateway's: a replica that
  // closed the connection or answered something not HTTP (crashed, killed mid-request), or none
  // within the load balancer's server timeout. The request may have run, as after a lost
  // connection.
  replica_failed: { status: 502, type: "api_error" },
  replica_timeout: { status: 504, type: "api_error" },
} as const satisfies Record<string, { status: number; type: string }>;

export type ErrorCode = keyof typeof ERRORS;

/** The one exception type routes throw; the handler below turns it into the one error shape. */
export class ApiError extends Error {
  readonly status: number;
  readonly type: string;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly options: {
      param?: string;
      headers?: Record<string, string>;
      /** Extra fields inside `error`. */
      details?: Record<string, unknown>;
      /** Extra top-level fields beside `error` (the x402 challenge: `x402Version`, `accepts`). */
      top?: Record<string, unknown>;
      /**
       * The refusal of a key that is not even well-formed: made before any store work, and a
       * guess of nothing, so not counted against the client address (http/refused-credentials.ts).
       */
      malformedKey?: true;
      /**
       * A payment refused on what the chain answered (payments/verify.ts): it cost RPC calls, so a
       * keyless caller's is counted against its address's refused payments (`x402-refused`)
       * whatever its code, as every `payment_invalid` is.
       */
      askedChain?: true;
    } = {},
  ) {
    super(message);
    this.status = ERRORS[code].status;
    this.type = ERRORS[code].type;
  }

  /** Adds headers to the answer (those already set win: an error's own Retry-After is kept). */
  withHeaders(headers: Record<string, string>): this {
    this.options.headers = { ...headers, ...this.options.headers };
    return this;
  }
}

export interface ErrorBody {
  error: {
    type: string;
    code: ErrorCode;
    message: string;
    param?: string;
    request_id: string;
  } & Record<string, unknown>;
}

export function errorBody(err: ApiError, requestId: string): ErrorBody {
  return {
    ...err.options.top,
    error: {
      type: err.type,
      code: err.code,
      message: err.message,
      ...(err.options.param !== undefined ? { param: err.options.param } : {}),
      ...err.options.details,
      request_id: requestId,
    },
  };
}

export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof StoreUnavailableError) {
    return new ApiError(
      "store_unavailable",
      "The service's data store is unavailable; retry shortly.",
      {
        headers: { "Retry-After": "1" },
      },
    );
  }
  if (err instanceof BooksUnavailableError) {
    return new ApiError(
      "books_unavailable",
      "The usage records (the books' database) are unavailable; calls are still served and charged. Retry shortly.",
      {
        headers: { "Retry-After": "5" },
      },
    );
  }
  const e = err as {
    type?: string;
    status?: number;
    code?: string;
    expose?: boolean;
    message?: string;
    limit?: number;
    param?: string;
  };
  // body-parser's errors, recognised by their documented `type` (ours too: see json-body.ts).
  // The limit is named: a caller cannot otherwise know how much to cut (raw-body sets `limit`).
  if (e?.type === "entity.too.large")
    return new ApiError(
      "body_too_large",
      typeof e.limit === "number"
        ? `The request body is larger than the limit of ${e.limit} bytes.`
        : "The request body is larger than the limit.",
    );
  if (e?.type === "entity.too.deep")
    return new ApiError("body_too_deep", e.message ?? "The request body nests too deeply.");
  if (e?.type === "entity.parse.failed")
    return new ApiError("invalid_json", "The request body is not valid JSON.");
  // A lone surrogate escaped in a string (json-body.ts): the JSON parses, its text is no Unicode.
  if (e?.type === "entity.not.unicode")
    return new ApiError("validation_failed", e.message ?? "The request body is not Unicode text.", {
      ...(e.param ? { param: e.param } : {}),
    });
  if (e?.type === "encoding.unsupported" || e?.type === "charset.unsupported") {
    return new ApiError(
      "unsupported_media_type",
      "The request body's encoding is not supported; send JSON as UTF-8.",
    );
  }
  // A body that does not decompress as its Content-Encoding says: zlib's Z_* codes (gzip,
  // deflate), brotli's ERR__ERROR_* and ERR_BROTLI_* ones.
  if (
    typeof e?.code === "string" &&
    (e.code.startsWith("Z_") || e.code.startsWith("ERR__ERROR_") || e.code.startsWith("ERR_BROTLI"))
  ) {
    return new ApiError(
      "invalid_content_encoding",
      "The request body is not encoded as its Content-Encoding header says.",
    );
  }
  // The router could not percent-decode a path segment.
  if (err instanceof URIError)
    return new ApiError(
      "invalid_path",
      "The request path holds a malformed percent-encoded sequence.",
    );
  // Any other client error a library reports (http-errors marks them `expose`): the caller's, never a 500.
  if (e?.expose && typeof e.status === "number" && e.status >= 400 && e.status < 500)
    return new ApiError("bad_request", "The request could not be read.");
  return new ApiError("internal_error", "An internal error occurred.");
}

/** Answers a failed request (what `errorAnswerer` makes). */
export type ErrorAnswer = (err: unknown, req: HttpRequest, res: HttpResponse) => void;

/**
 * Answers a failed request in the one error shape (and logs it when it is the gateway's fault,
 * with its path as the request log writes it: `pathForLog`, with the configured secrets
 * `redactSecrets` cuts out). Written on Node's API: express's error middleware and the keyed lane
 * both answer through it.
 */
export function errorAnswerer(
  log: Logger,
  redactSecrets: Redactor,
  onError?: (code: ErrorCode) => void,
): ErrorAnswer {
  return (err, req, res) => {
    const apiError = toApiError(err);
    const requestId = String(res.locals.requestId ?? "");
    onError?.(apiError.code);
    // A 5xx with a code of its own (a dependency away, a payment still settling, a busy pool) is a
    // state, told by its code (and counted in metrics): a warning without a stack, with the cause's
    // one line when a library's error was mapped to it. `internal_error` is a bug: its stack.
    if (apiError.status >= 500) {
      const path = pathForLog(req.originalUrl, redactSecrets);
      if (apiError.code !== "internal_error")
        log.warn(
          {
            code: apiError.code,
            status: apiError.status,
            request_id: requestId,
            path,
            ...(err === apiError ? {} : { cause: String(err) }),
          },
          apiError.message,
        );
      else log.error({ err, request_id: requestId, path }, "request failed");
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    putHeaders(res, apiError.options.headers);
    sendJson(res, apiError.status, errorBody(apiError, requestId));
  };
}

/** Express's error middleware: answers through `answer` (an `errorAnswerer`, as app.ts wraps it). */
export function errorHandler(answer: ErrorAnswer): ErrorRequestHandler {
  return (err, req, res, _next) => answer(err, req, res);
}

/**
 * The 404 of every path no route serves; the path it repeats is bounded and redacted (`shownPath`).
 * `basePath`: config.basePath, for the page's links.
 */
export function routeNotFound(redactSecrets: Redactor, basePath: string): RequestHandler {
  return (req, res, next) => {
    const path = shownPath(req.originalUrl, redactSecrets);
    // A person who followed a broken link or mistyped an address (/docs/nope) is shown a page; an
    // API client keeps the one error shape.
    if ((req.method === "GET" || req.method === "HEAD") && wantsHtml(req)) {
      res.status(404);
      sendPage(
        res,
        renderNotice({
          ok: false,
          basePath,
          title: "No such page",
          message: `There is nothing at ${path}.`,
          next: { href: "/docs", label: "Read the API reference" },
        }),
      );
      return;
    }
    next(new ApiError("route_not_found", `No route for ${req.method} ${path}.`));
  };
}
