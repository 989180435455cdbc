/**
 * One HTTP exchange with the gateway, the way every resource makes it: the key header, a
 * timeout, an automatic Idempotency-Key on tool calls, retries with backoff (honouring
 * Retry-After), x402 payment on a 402 when a wallet is set, and every failure turned into a
 * ToolgateError. fetch only: it runs in Node 20+, browsers and edge runtimes.
 *
 * The retry rule, the Python library's too (sdk/python/src/toolgate/_transport.py), at most
 * `maxRetries` times:
 * - a connection that could not be made (refused, no such host, unreachable, connect timeout)
 *   is retried for every request: nothing was sent;
 * - a connection lost after sending, or an answer that did not come in time, is retried only when
 *   a repeat cannot act twice: reads, and tool calls, which always carry an Idempotency-Key the
 *   gateway runs and charges once (a paid call re-sends the same signed payment);
 * - 429 is retried for every request (refused before anything ran); 503, but `tool_unavailable`,
 *   and a load balancer's 502 `replica_failed` and 504 `replica_timeout` (the replica failed
 *   mid-request), as a lost connection. Nothing else: a 409 `idempotency_conflict` is another body under the
 *   same key (duplicates still running are waited for by the gateway, never answered 409), and a
 *   tool's own failure (502, 504) is the caller's to judge.
 */
import { checkTimeoutMs, redactUrl } from "./checks.js";
import { ToolgateError } from "./errors.js";
import type { LazyWalletPayer } from "./lazy-wallet-payer.js";
import { VERSION } from "./version.js";

/**
 * A load balancer's answer for a replica that failed or went silent mid-request (the gateway's
 * shipped HAProxy): the request may have run, as after a lost connection.
 */
const LOST_ON_THE_WAY = new Set(["replica_failed", "replica_timeout"]);

/** Who is calling, as the Python library says it (`toolgate-python/…`), for the gateway's logs. */
export const USER_AGENT = `toolgate-typescript/${VERSION}`;
/**
 * A browser (a page or a web worker) sends its own User-Agent: setting it there would at best be
 * ignored and at worst add a header the gateway's CORS answer does not allow, failing every request.
 */
const inBrowser = () =>
  typeof (globalThis as { document?: unknown }).document !== "undefined" ||
  typeof (globalThis as { WorkerGlobalScope?: unknown }).WorkerGlobalScope !== "undefined";

export interface TransportOptions {
  apiKey: string | undefined;
  baseUrl: string;
  payer: LazyWalletPayer | undefined;
  maxRetries: number;
  timeoutMs: number;
  fetch: typeof globalThis.fetch;
  defaultHeaders: Record<string, string>;
}

export interface RequestSpec {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /**
   * Whether a retry can neither repeat an effect nor be answered otherwise: GETs, and calls
   * carrying an Idempotency-Key the gateway honours. Not DELETEs: the gateway answers a repeated
   * one 404, so a delete done with its answer lost would end as an error. Other requests are
   * retried only on 429 (refused before anything ran) and when no connection could be made.
   */
  idempotent?: boolean;
  idempotencyKey?: string;
  /** Pay a 402 with the wallet (tool calls). */
  payable?: boolean;
  signal?: AbortSignal;
  timeoutMs?: number;
  maxRetries?: number;
}

export interface RawResult {
  data: unknown;
  response: Response;
  /** Whether the call was paid with the wallet (x402). */
  paid: boolean;
}

const MAX_RETRY_DELAY_MS = 60_000;

/**
 * The largest answer body read (as Python's): 384 MiB. Above the largest answer the gateway sends
 * (a tool's output is at most 256 MiB, WORKER_MAX_RESPONSE_BYTES, with room for its JSON
 * around it), below what one JavaScript string can hold (~512 MiB), which `response.text()` would
 * fail on as if the connection were lost. A larger answer is `invalid_response`, not retried.
 */
export const MAX_RESPONSE_BYTES = 384 * 1024 * 1024;

/** The answer's body, read whole unless it is over MAX_RESPONSE_BYTES (then the read is cancelled). */
async function readBody(response: Response, requestId: string | undefined): Promise<string> {
  const declared = response.headers.get("content-length");
  if (declared && /^[0-9]+$/.test(declared.trim()) && Number(declared) > MAX_RESPONSE_BYTES) {
    await response.body?.cancel().catch(() => undefined);
    throw tooLarge(response, requestId);
  }
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_RESPONSE_BYTES) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(response, requestId);
    }
    chunks.push(value);
  }
  const whole = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    whole.set(chunk, at);
    at += chunk.byteLength;
  }
  return new TextDecoder().decode(whole);
}

/** The errors readBody throws: told apart from a lost connection in the request's catch. */
const tooLargeErrors = new WeakSet<object>();
function tooLarge(response: Response, requestId: string | undefined): ToolgateError {
  const error = new ToolgateError({
    status: 0,
    code: "invalid_response",
    message: `The gateway answered ${response.status} with a body over ${MAX_RESPONSE_BYTES / 1024 / 1024} MiB, more than the client reads: not the gateway's answer (a proxy, or a base URL that is not the gateway's?).`,
    requestId,
  });
  tooLargeErrors.add(error);
  return error;
}

/** Error codes of a connection that was never made (Node's and undici's): nothing was sent. */
const NOT_CONNECTED = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/**
 * Whether fetch failed before a connection existed. fetch hides the reason in `cause` (an
 * AggregateError when several addresses were tried); a runtime that says nothing (a browser's
 * "Failed to fetch") counts as a lost connection, the safe reading.
 */
export function neverConnected(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== "object" || depth > 4) return false;
  const { code, cause, errors } = error as { code?: unknown; cause?: unknown; errors?: unknown };
  if (typeof code === "string" && NOT_CONNECTED.has(code)) return true;
  if (Array.isArray(errors) && errors.length > 0)
    return errors.every((e) => neverConnected(e, depth + 1));
  return neverConnected(cause, depth + 1);
}

/**
 * An id or tool name as one path segment, the one way every path is built: encoded, and never
 * "", "." or "..", which a URL resolves to another path (`keys.rotate("..")` would post to
 * /api/v1/rotate).
 */
export function segment(value: string): string {
  if (value === "" || value === "." || value === "..")
    throw new ToolgateError({
      status: 0,
      code: "invalid_argument",
      message: `${JSON.stringify(value)} is not an id or tool name: a path segment cannot be empty, "." or "..".`,
    });
  return encodeURIComponent(value);
}

/**
 * Exponential backoff, 0.5 s, 1 s, 2 s … capped at 8 s, of which a random half to all is waited
 * (the Python library's): clients that failed together do not retry together, and a gateway that
 * is restarting is never asked again at once.
 */
const backoffMs = (attempt: number) =>
  Math.min(8_000, 500 * 2 ** attempt) * (0.5 + Math.random() / 2);
/**
 * Waits before a retry; the caller's signal ends the wait (and the request) at once. Its listener
 * is removed when the wait ends: a signal shared by many calls would otherwise gather one per
 * retry (Node warns past 10).
 */
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(abortedByCaller(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortedByCaller(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });

/**
 * The caller's own signal ended the request. It is a ToolgateError like every other failure (the
 * signal's reason kept as `cause`), not the runtime's bare AbortError: the README promises one
 * error class, and a caller's handler need not know which runtime it runs on.
 */
function abortedByCaller(signal: AbortSignal): ToolgateError {
  const reason = signal.reason as Error | undefined;
  return new ToolgateError({
    status: 0,
    code: "aborted",
    message: `The request was aborted by the caller's signal${reason?.message ? ` (${reason.message})` : ""}: if it had been sent, it may have been received and run; check (e.g. list what exists) before retrying.`,
    cause: signal.reason,
  });
}

/**
 * A redirect is not followed (the gateway never redirects an API call: one comes from a proxy in
 * front of it, or a base URL that is not the gateway's); it is an error raised in the client.
 */
function redirectRefused(response: Response): ToolgateError {
  const location = response.headers.get("location");
  return new ToolgateError({
    status: 0,
    code: "invalid_response",
    message: `The gateway answered ${response.status || "a redirect"}${location ? ` to ${redactUrl(location)}` : ""}: the client does not follow redirects, which would send your API key to another address. Set baseUrl to the gateway's own address.`,
    requestId: response.headers.get("x-request-id") ?? undefined,
  });
}

export class Transport {
  /** A private field: left out when a client is logged, inspected or turned into JSON. */
  readonly #apiKey: string | undefined;
  readonly options: Omit<TransportOptions, "apiKey">;

  constructor({ apiKey, ...options }: TransportOptions) {
    this.#apiKey = apiKey;
    this.options = options;
  }

  async request(spec: RequestSpec): Promise<RawResult> {
    const url = new URL(spec.path.replace(/^\//, ""), this.options.baseUrl.replace(/\/?$/, "/"));
    for (const [k, v] of Object.entries(spec.query ?? {}))
      if (v !== undefined) url.searchParams.set(k, String(v));
    const maxRetries = spec.maxRetries ?? this.options.maxRetries;
    checkTimeoutMs(spec.timeoutMs);
    // defaultHeaders' names are lower-case (checks.ts): one of them replaces a default, whatever
    // case the caller wrote it in, instead of both being sent.
    const headers: Record<string, string> = {
      accept: "application/json",
      ...(inBrowser() ? {} : { "user-agent": USER_AGENT }),
      ...this.options.defaultHeaders,
    };
    if (this.#apiKey) headers["x-api-key"] = this.#apiKey;
    if (spec.body !== undefined) headers["content-type"] = "application/json";
    if (spec.idempotencyKey !== undefined) headers["idempotency-key"] = spec.idempotencyKey;
    const body = spec.body === undefined ? undefined : JSON.stringify(spec.body);
    let payment: Record<string, string> | undefined;

    for (let attempt = 0; ; attempt++) {
      const canRetry = attempt < maxRetries;
      let response: Response;
      let text: string;
      try {
        const timeout = AbortSignal.timeout(spec.timeoutMs ?? this.options.timeoutMs);
        const signal = spec.signal ? AbortSignal.any([spec.signal, timeout]) : timeout;
        response = await this.options.fetch(url, {
          method: spec.method,
          headers: { ...headers, ...payment },
          body,
          signal,
          // The key is a header fetch would send on to wherever a redirect points: none is followed.
          redirect: "manual",
        });
        // The body is read under the same timeout: an answer whose headers came in time but whose
        // body trickles in is the attempt's timeout too, not an error of another kind.
        text = await readBody(response, response.headers.get("x-request-id") ?? undefined);
      } catch (error) {
        if (error instanceof ToolgateError && tooLargeErrors.has(error)) throw error;
        if (spec.signal?.aborted) throw abortedByCaller(spec.signal);
        const timedOut = (error as Error)?.name === "TimeoutError";
        if (canRetry && (spec.idempotent || (!timedOut && neverConnected(error)))) {
          await sleep(backoffMs(attempt), spec.signal);
          continue;
        }
        const reason = (error as Error)?.message ?? error;
        throw new ToolgateError({
          status: 0,
          code: timedOut ? "timeout" : "network_error",
          message: timedOut
            ? // The request may have been sent whole (or still be on its way) when time ran out.
              `No answer from ${url.origin} within ${spec.timeoutMs ?? this.options.timeoutMs} ms: the request may have been received and run; check (e.g. list what exists) before retrying.`
            : neverConnected(error)
              ? `Could not reach ${url.origin}: ${reason}`
              : // Sent, or perhaps sent (a runtime that gives no reason): "could not reach" would
                // invite a retry that creates a second key or sends a second test event.
                `Lost the connection to ${url.origin} (${reason}): the request may have been received and run; check (e.g. list what exists) before retrying.`,
          cause: error,
        });
      }
      if (response.type === "opaqueredirect" || (response.status >= 300 && response.status < 400))
        throw redirectRefused(response);
      if (response.ok) {
        let data: unknown = null;
        try {
          data = text ? JSON.parse(text) : null;
        } catch (error) {
          // Raised here, not by the gateway: status 0, like every client-side error.
          throw new ToolgateError({
            status: 0,
            code: "invalid_response",
            message: `The gateway answered ${response.status} with a body that is not JSON.`,
            requestId: response.headers.get("x-request-id") ?? undefined,
            cause: error,
          });
        }
        return { data, response, paid: payment !== undefined };
      }
      // A 402 is answered by paying once; the same signed payment is re-sent on any retry, so a
      // retried paid call can never pay twice.
      if (
        response.status === 402 &&
        spec.payable &&
        this.options.payer &&
        !this.#apiKey &&
        !payment
      ) {
        payment = await this.options.payer.paymentHeaders(response, text);
        attempt--;
        continue;
      }
      const error = ToolgateError.fromResponse(response, text);
      // 429: refused before anything ran. 503: a dependency is briefly down (or a payment is still
      // settling) — except a tool with no provider configured, which a retry cannot change.
      const retryable =
        error.status === 429 ||
        (spec.idempotent &&
          (LOST_ON_THE_WAY.has(error.code) ||
            (error.status === 503 && error.code !== "tool_unavailable")));
      if (retryable && canRetry) {
        const delay = error.retryAfter === undefined ? backoffMs(attempt) : error.retryAfter * 1000;
        if (delay <= MAX_RETRY_DELAY_MS) {
          await sleep(delay, spec.signal);
          continue;
        }
      }
      throw error;
    }
  }
}
