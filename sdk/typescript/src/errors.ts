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
    param?: string | undefined;
    requestId?: string | undefined;
    retryAfter?: number | undefined;
    body?: Record<string, unknown> | undefined;
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

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const DAY = "(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)";
const LONG_DAY = "(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)";
const MONTH = `(${MONTHS.join("|")})`;
const TIME = "(\\d{2}):(\\d{2}):(\\d{2})";
/** RFC 9110's three HTTP-date forms, exactly (the Python library's `_HTTP_DATES`). */
const IMF_FIXDATE = new RegExp(`^${DAY}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC_850 = new RegExp(`^${LONG_DAY}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
const ASCTIME = new RegExp(`^${DAY} ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`);

/** An HTTP-date as epoch milliseconds, or undefined when it is not one (or names no real time). */
function httpDate(value: string): number | undefined {
  let parts: [string, string, string, string, string, string] | undefined;
  let m = IMF_FIXDATE.exec(value);
  if (m) parts = [m[3]!, m[2]!, m[1]!, m[4]!, m[5]!, m[6]!];
  else if ((m = RFC_850.exec(value))) {
    // A two-digit year more than 50 years ahead is the last such year in the past (RFC 9110).
    const now = new Date().getUTCFullYear();
    let year = now - (now % 100) + Number(m[3]);
    if (year > now + 50) year -= 100;
    parts = [String(year), m[2]!, m[1]!, m[4]!, m[5]!, m[6]!];
  } else if ((m = ASCTIME.exec(value))) parts = [m[6]!, m[1]!, m[2]!.trim(), m[3]!, m[4]!, m[5]!];
  if (!parts) return undefined;
  const [year, month, day, hour, minute, second] = [
    Number(parts[0]),
    MONTHS.indexOf(parts[1]),
    Number(parts[2]),
    Number(parts[3]),
    Number(parts[4]),
    Number(parts[5]),
  ];
  if (hour > 23 || minute > 59 || second > 60) return undefined;
  const at = Date.UTC(year, month, day, hour, minute, Math.min(second, 59));
  // Date.UTC rolls over (31 Feb is 3 Mar): such a date is not one.
  return new Date(at).getUTCDate() === day ? at : undefined;
}

/**
 * `Retry-After` as seconds (RFC 9110): delta-seconds, digits only, or an HTTP-date (the seconds
 * until then, 0 when past). Anything else (`-5`, `+5`, `1e3`, `1.5`, `nan`, text) is as if there
 * were no header: the backoff applies. The Python library's `retry_after_seconds` reads it alike.
 */
export function retryAfterSeconds(header: string | null): number | undefined {
  if (!header) return undefined;
  const value = header.replace(/^[ \t]+|[ \t]+$/g, "");
  if (/^\d+$/.test(value)) return Number(value);
  const at = httpDate(value);
  return at === undefined ? undefined : Math.max(0, (at - Date.now()) / 1000);
}
