/**
 * The one error class of the library. API errors carry the gateway's error object
 * ({type, code, message, param?, request_id}); errors raised on this side (network, timeout, the
 * caller's own abort, spending cap, webhook verification) carry status 0 and a code of their own.
 */
export type ClientErrorCode =
  | "network_error"
  | "timeout"
  | "aborted"
  | "spend_cap_exceeded"
  | "payment_failed"
  | "invalid_response"
  | "invalid_argument"
  | "webhook_signature_invalid"
  | "webhook_timestamp_invalid";

export class ToolgateError extends Error {
  override readonly name = "ToolgateError";
  /** The HTTP status, or 0 when the error arose in the client (no answer, refused to pay…). */
  readonly status: number;
  /** The gateway's stable error code (see the README's errors table), or a client-side code. */
  readonly code: string;
  /** The input field the error is about, as a dotted path, when the gateway names one. */
  readonly param: string | undefined;
  /** The gateway's `request_id` (also the `X-Request-Id` header), for support requests. */
  readonly requestId: string | undefined;
  /** Seconds the gateway asked to wait (`Retry-After`), on 429 and 503. */
  readonly retryAfter: number | undefined;
  /** The whole error body: e.g. `accepts` (the x402 offer) on 402, `required_tier` on 403. */
  readonly body: Record<string, unknown> | undefined;

  constructor(init: {
    status: number;
    code: string;
    message: string;
    param?: string;
    requestId?: string;
    retryAfter?: number;
    body?: Record<string, unknown>;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.param = init.param;
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
    this.body = init.body;
  }

  /** Builds the error from a non-2xx answer whose body has already been read. */
  static fromResponse(response: Response, text: string): ToolgateError {
    let body: Record<string, unknown> | undefined;
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      body = undefined;
    }
    const error = (body?.error && typeof body.error === "object" ? body.error : {}) as Record<
      string,
      unknown
    >;
    const str = (v: unknown) => (typeof v === "string" ? v : undefined);
    return new ToolgateError({
      status: response.status,
      code: str(error.code) ?? `http_${response.status}`,
      message: str(error.message) ?? (text.slice(0, 200) || `HTTP ${response.status}`),
      param: str(error.param),
      requestId: str(error.request_id) ?? response.headers.get("x-request-id") ?? undefined,
      retryAfter: retryAfterSeconds(response.headers.get("retry-after")),
      body,
    });
  }
}

/** `Retry-After` as seconds: either delta-seconds or an HTTP date. */
export function retryAfterSeconds(header: string | null): number | undefined {
  if (!header) return undefined;
  if (/^\d+(\.\d+)?$/.test(header.trim())) return Number(header);
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, (at - Date.now()) / 1000);
}
