import { request, type ClientRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { request as tlsRequest, type Agent as TlsAgent } from "node:https";
import {
  createProxyMiddleware,
  debugProxyErrorsPlugin,
  proxyEventsPlugin,
  type Options,
  type RequestHandler,
} from "http-proxy-middleware";
import type { Agent } from "node:http";
import { jsonDepthExceeds } from "../http/json-body.js";
import { ShutdownInterruption } from "../http/request-guard.js";

/**
 * Forwarding a call to a tool worker. The invocation service decides what the outcome means
 * (commit, refund, which error); a forwarder only carries the call and reports what came back.
 */
export interface ForwardCall {
  /** Worker pool origin, e.g. http://127.0.0.1:8500 */
  origin: string;
  path: string;
  input: unknown;
  requestId: string;
  timeoutMs: number;
  /** Aborted when the request failed on the gateway's side (see http/request-guard.ts): the call is abandoned. */
  signal?: AbortSignal;
}

export type ForwardOutcome =
  | { kind: "response"; status: number; body: Buffer }
  | { kind: "timeout" }
  | { kind: "unreachable"; message: string }
  /** The gateway failed (the input could not be serialised, or the request crashed): nothing to blame on the worker. */
  | { kind: "gateway_error"; message: string }
  /** The gateway is shutting down and its grace period ran out before the worker answered. */
  | { kind: "interrupted" };

export type Forwarder = (call: ForwardCall) => Promise<ForwardOutcome>;

interface Pending {
  call: ForwardCall;
  /** The largest answer read from the worker (tooLarge beyond it). */
  maxResponseBytes: number;
  /** The input, serialised before the proxy runs: nothing that can throw on the caller's input runs in its listeners. */
  body: Buffer;
  settle: (outcome: ForwardOutcome) => void;
  proxyReq?: ClientRequest;
  timedOut: boolean;
}

const PENDING = Symbol("toolgate.forward");
type Carrier = IncomingMessage & { [PENDING]?: Pending };
const pending = (req: IncomingMessage) => (req as Carrier)[PENDING]!;

/**
 * Only these headers reach a worker: never the caller's key, cookies or anything else, nor its
 * Connection header (hop-by-hop: `close` made the gateway open a connection to the workers per call).
 */
const FORWARDED_HEADERS = new Set(["host", "content-type", "content-length", "accept"]);

/**
 * A worker-style error answer for a call its worker (or endpoint) failed: the invocation service
 * reads `error.message` (and `param`) from it, so the caller's error names what went wrong.
 */
export const failedAnswer = (status: number, message: string, param?: string): ForwardOutcome => ({
  kind: "response",
  status,
  body: Buffer.from(JSON.stringify({ error: { message, ...(param ? { param } : {}) } })),
});

/**
 * A worker's answer past `limit` bytes, cut off: the call fails (refunded) rather than the gateway
 * holding it whole. Without a limit, an answer past V8's longest string (~512 MiB) was served as a
 * charged 500, and a few large ones could exhaust the process's memory (a dedicated pool is the
 * customer's own server).
 */
const tooLarge = (limit: number) => failedAnswer(502, `its answer is larger than ${limit} bytes`);

/**
 * An answer whose headers came and whose body then broke off: the worker was reached and failed
 * this call (502 `tool_failed`), not "unreachable" (503, as if no worker had answered at all).
 */
const brokenOff = (timedOut: boolean, err: Error): ForwardOutcome =>
  timedOut ? { kind: "timeout" } : failedAnswer(502, `its answer broke off (${err.message})`);

/** Reads a worker's answer whole, up to `limit` bytes; `settle` is told once, either way. */
function readAnswer(
  res: IncomingMessage,
  limit: number,
  settle: (outcome: ForwardOutcome) => void,
): void {
  if (Number(res.headers["content-length"] ?? 0) > limit) {
    res.destroy();
    settle(tooLarge(limit));
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  res.on("data", (c: Buffer) => {
    size += c.length;
    if (size <= limit) return void chunks.push(c);
    res.destroy();
    settle(tooLarge(limit));
  });
  res.on("end", () =>
    settle({ kind: "response", status: res.statusCode ?? 502, body: Buffer.concat(chunks) }),
  );
}

/**
 * A tool's answer is a JSON object, whichever door asked: a worker's 2xx answer that is not one
 * (a dedicated pool is the customer's own server: a 204, an HTML page, a bare array) is a failed
 * call — 502 `tool_failed`, refunded, `tool.error` — not a charged one. Before, MCP's door parsed
 * it after the charge was kept (charged, answered `internal_error`) and REST's served it raw.
 */
function jsonObjectOnly(outcome: ForwardOutcome, maxDepth?: number): ForwardOutcome {
  if (outcome.kind !== "response" || outcome.status < 200 || outcome.status >= 300) return outcome;
  // Nested deeper than the gateway takes a request body: what walks it later (MCP's JSON.stringify)
  // overflows the stack, and MCP answered an empty 200 with the charge kept. Counted on the bytes.
  if (maxDepth !== undefined && jsonDepthExceeds(outcome.body, maxDepth))
    return failedAnswer(502, `its answer nests deeper than ${maxDepth} levels`);
  let value: unknown;
  try {
    value = JSON.parse(outcome.body.toString("utf8"));
  } catch {
    return failedAnswer(
      502,
      `its answer is not JSON (HTTP ${outcome.status}, ${outcome.body.length} bytes)`,
    );
  }
  if (value === null || typeof value !== "object" || Array.isArray(value))
    return failedAnswer(502, "its answer is not a JSON object");
  return outcome;
}

/**
 * A forwarder for doors that have no HTTP exchange of their own to proxy (MCP), and for calls to
 * a dedicated pool: the same call, made with node:http (or node:https, over `tlsAgent`, for an
 * https origin) over a keep-alive agent. Its answers are checked to be JSON objects
 * (`jsonObjectOnly`): MCP's door answers with the parsed object, and a dedicated pool is a server
 * the gateway does not run. The REST door's proxy to the shared workers (ours, which answer JSON
 * by construction) passes their bytes on unparsed: an answer may be up to
 * WORKER_MAX_RESPONSE_BYTES, and parsing each would hold the event loop for it.
 * With `maxDepth` (a dedicated pool's), an answer nested deeper fails the call too, as a request
 * body that deep is refused; the shared workers' answers are ours, and served as REST serves them.
 */
export function createHttpForwarder(
  agent: Agent,
  maxResponseBytes: number,
  tlsAgent?: TlsAgent,
  maxDepth?: number,
): Forwarder {
  return (call) =>
    new Promise<ForwardOutcome>((resolve) => {
      const body = serialise(call);
      if (!Buffer.isBuffer(body)) return resolve(body);
      if (call.signal?.aborted) return resolve(abandoned(call.signal));
      const target = new URL(call.path, call.origin);
      const tls = target.protocol === "https:";
      let timedOut = false;
      let deadline: NodeJS.Timeout | undefined;
      const settle = (outcome: ForwardOutcome) => {
        clearTimeout(deadline);
        resolve(outcome);
      };
      const req = (tls ? tlsRequest : request)(
        {
          agent: tls ? tlsAgent : agent,
          host: target.hostname.replace(/^\[|\]$/g, ""),
          port: target.port,
          path: target.pathname,
          method: "POST",
          headers: {
            "content-type": "application/json",
            "content-length": body.length,
            "x-request-id": call.requestId,
            "x-toolgate-deadline-ms": call.timeoutMs,
          },
        },
        (res) => {
          readAnswer(res, maxResponseBytes, (outcome) => settle(jsonObjectOnly(outcome, maxDepth)));
          res.on("error", (err) => settle(brokenOff(timedOut, err)));
        },
      );
      // One deadline for the whole exchange (connect, send, answer), as the REST door's proxy
      // has: a socket's idle timeout let a worker that sent its answer a little at a time hold
      // the call (its pool slot, its charge) past the tool's timeout, for as long as it went on.
      deadline = setTimeout(() => {
        timedOut = true;
        settle({ kind: "timeout" });
        req.destroy();
      }, call.timeoutMs);
      req.on("error", (err) =>
        settle(timedOut ? { kind: "timeout" } : { kind: "unreachable", message: err.message }),
      );
      call.signal?.addEventListener("abort", () => {
        settle(abandoned(call.signal!));
        req.destroy();
      });
      req.end(body);
    });
}

/** The call's input as the worker's request body, or the gateway error that stops it. */
function serialise(call: ForwardCall): Buffer | ForwardOutcome {
  try {
    return Buffer.from(JSON.stringify(call.input));
  } catch (err) {
    return {
      kind: "gateway_error",
      message: `the input could not be serialised: ${(err as Error).message}`,
    };
  }
}

/** What a call abandoned through its signal ends as: interrupted by the shutdown, or failed. */
export const abandoned = (signal: AbortSignal): ForwardOutcome =>
  signal.reason instanceof ShutdownInterruption
    ? { kind: "interrupted" }
    : {
        kind: "gateway_error",
        message: `the request failed: ${String((signal.reason as Error)?.message ?? signal.reason)}`,
      };

/**
 * The REST door's forwarder: http-proxy-middleware over keep-alive connections, one proxy per
 * worker pool origin (at most three, made on first use). The response is buffered rather than
 * streamed, because the charge is committed or refunded on the worker's status before the caller
 * sees anything, and an Idempotency-Key replay needs the body.
 */
export function createProxyForwarder(
  agent: Agent,
  maxResponseBytes: number,
): (req: IncomingMessage, res: ServerResponse) => Forwarder {
  const proxies = new Map<string, RequestHandler>();
  const proxyFor = (origin: string): RequestHandler => {
    let proxy = proxies.get(origin);
    if (!proxy) proxies.set(origin, (proxy = createWorkerProxy(origin, agent)));
    return proxy;
  };
  return (req, res) => (call) =>
    new Promise<ForwardOutcome>((resolve) => {
      const body = serialise(call);
      if (!Buffer.isBuffer(body)) return resolve(body);
      if (call.signal?.aborted) return resolve(abandoned(call.signal));
      let done = false;
      const timer = setTimeout(() => {
        p.timedOut = true;
        p.proxyReq?.destroy();
        settle({ kind: "timeout" });
      }, call.timeoutMs);
      const onAbort = () => {
        settle(abandoned(call.signal!));
        p.proxyReq?.destroy();
      };
      call.signal?.addEventListener("abort", onAbort);
      const settle = (outcome: ForwardOutcome) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        call.signal?.removeEventListener("abort", onAbort);
        resolve(outcome);
      };
      const p: Pending = { call, maxResponseBytes, body, settle, timedOut: false };
      (req as unknown as Carrier)[PENDING] = p;
      req.url = call.path; // the worker's path for this tool; the caller's path is kept in req.originalUrl
      // Node has already answered the caller's `Expect: 100-continue`. Copied onto the call to the
      // worker, it makes Node send that request's headers at once, before the handler below can
      // set them, and the call then hangs until its deadline.
      delete req.headers.expect;
      proxyFor(call.origin)(req, res, (err?: unknown) =>
        settle({ kind: "unreachable", message: String(err ?? "proxy did not forward") }),
      ).catch((err: unknown) =>
        settle({ kind: "gateway_error", message: (err as Error)?.message ?? String(err) }),
      );
    });
}

/** How a proxied call reports back: the carried call's `settle`, whatever happens. */
const PROXY_EVENTS: Options["on"] = {
  proxyReq(proxyReq, req) {
    const p = pending(req);
    p.proxyReq = proxyReq;
    for (const name of proxyReq.getHeaderNames())
      if (!FORWARDED_HEADERS.has(name)) proxyReq.removeHeader(name);
    // The body was parsed and validated by the gateway: send the validated input.
    proxyReq.setHeader("content-type", "application/json");
    proxyReq.setHeader("content-length", p.body.length);
    proxyReq.setHeader("x-request-id", p.call.requestId);
    proxyReq.setHeader("x-toolgate-deadline-ms", p.call.timeoutMs);
    proxyReq.write(p.body);
  },
  proxyRes(proxyRes, req) {
    const p = pending(req);
    readAnswer(proxyRes, p.maxResponseBytes, p.settle);
    proxyRes.on("error", (err) => p.settle(brokenOff(p.timedOut, err)));
  },
  error(err, req) {
    const p = pending(req);
    p.settle(p.timedOut ? { kind: "timeout" } : { kind: "unreachable", message: err.message });
  },
};

/**
 * The proxy to one worker origin. Its target is given parsed and fixed, and the path is set on
 * the request before the proxy runs, rather than through the `router` and `pathRewrite` options:
 * those cost a URL parse and several awaited promises on every call.
 */
function createWorkerProxy(origin: string, agent: Agent): RequestHandler {
  return createProxyMiddleware({
    target: proxyTarget(origin) as unknown as string,
    changeOrigin: true,
    agent,
    selfHandleResponse: true,
    // The default plugins less the logger's: with no logger configured it still builds a URL and
    // a log line for every call, to hand them to a no-op (a measured share of a keyed call's CPU).
    // Requests are logged once, by the gateway's own request log.
    ejectPlugins: true,
    plugins: [debugProxyErrorsPlugin, proxyEventsPlugin],
    on: PROXY_EVENTS,
  });
}

/** An origin in the parsed form http-proxy uses as is (a string target is parsed again on every call). */
function proxyTarget(origin: string) {
  const url = new URL(origin);
  // WHATWG keeps an IPv6 host in brackets; node:http wants the bare address.
  return {
    protocol: url.protocol,
    host: url.host,
    hostname: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: url.port,
    path: url.pathname,
  };
}
