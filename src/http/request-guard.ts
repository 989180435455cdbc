import { AsyncLocalStorage } from "node:async_hooks";
import type { RequestHandler } from "express";
import type { Logger } from "pino";
import { ApiError, errorBody } from "./errors.js";
import { sendJson, type HttpRequest, type HttpResponse } from "./exchange.js";
import { pathForLog } from "./logged-path.js";
import type { Redactor } from "../lib/redact.js";

/**
 * One request never takes the process down. Every request runs in its own async scope
 * (AsyncLocalStorage), so an exception nobody caught — thrown in an event listener, a timer or
 * a forgotten promise while serving it — is traced back to the request whose code raised it, and
 * fails that request alone:
 *
 * - code that holds a charged call (`answering`, the invocation service) is told through an
 *   AbortSignal; it abandons the call, refunds it once and answers the error itself;
 * - otherwise the guard answers 500 `internal_error` in the one error shape, or, when the
 *   answer had already started, closes the connection.
 *
 * An exception outside any request (start-up, a background loop) still ends the process, as
 * Node would: nothing says what state it left behind.
 */
interface Scope {
  /** The request's answer, until it is done (then let go: see `run`). */
  res: HttpResponse | null;
  /** The request, for the log line of a crash that comes after its answer. */
  requestId: string;
  /** As received: made into the logged path only if that line is written (rarely), not on every request. */
  url: string;
  crashed: AbortController;
  /** Pieces of work that answer the request themselves when it crashes. */
  holders: number;
}

/** The reason a charged call is abandoned when the shutdown's grace period runs out. */
export class ShutdownInterruption extends Error {
  constructor() {
    super("the gateway is shutting down");
  }
}

export class RequestGuard {
  private readonly scopes = new AsyncLocalStorage<Scope>();
  /** Requests with a charged call under way (`answering`), for the shutdown to interrupt. */
  private readonly held = new Set<Scope>();
  private onNoneHeld: (() => void) | null = null;

  /** `redactSecrets` cuts the configured secrets out of the path a crash's line names (`pathForLog`). */
  constructor(
    private readonly log: Logger,
    private readonly redactSecrets: Redactor,
  ) {}

  /** Runs the rest of the request (every middleware and route after it) inside its scope. */
  readonly middleware: RequestHandler = (_req, res, next) => this.run(res, next);

  /** Runs `serve` (the whole handling of the request `res` answers) inside the request's scope. */
  run(res: HttpResponse, serve: () => void): void {
    const scope: Scope = {
      res,
      requestId: "",
      url: "",
      crashed: new AbortController(),
      holders: 0,
    };
    // Async resources made while serving a request (timers, sockets kept alive for later
    // requests) keep its scope as long as they live. Were the scope to hold the answer after
    // it is done, each request's objects would outlive young-generation GC: a keyed call
    // promoted ~19 KB to the old generation instead of ~5.5 KB (V8's sampling heap profiler),
    // and the scavenges copying them were the p99 of a call.
    res.once("close", () => {
      scope.requestId = String(res.locals.requestId ?? "");
      scope.url = (res.req as HttpRequest).originalUrl;
      scope.res = null;
    });
    this.scopes.run(scope, serve);
  }

  /**
   * Runs `work`, which answers the request itself if the request crashes meanwhile: it is given
   * the signal that says so. Outside any request (a test calling a service directly) the signal
   * never fires.
   */
  async answering<T>(work: (crashed: AbortSignal) => Promise<T>): Promise<T> {
    const scope = this.scopes.getStore();
    if (!scope) return work(new AbortController().signal);
    if (scope.holders++ === 0) this.held.add(scope);
    try {
      return await work(scope.crashed.signal);
    } finally {
      if (--scope.holders === 0) {
        this.held.delete(scope);
        if (this.held.size === 0) this.onNoneHeld?.();
      }
    }
  }

  /**
   * At the end of the shutdown's grace period: abandons every charged call still under way, so
   * each is refunded and answered (503 `shutting_down`) while the store is still open, and
   * resolves once they all have been. Without it the process would exit holding their charges.
   */
  interruptHeld(): Promise<void> {
    if (this.held.size === 0) return Promise.resolve();
    const done = new Promise<void>((resolve) => {
      this.onNoneHeld = resolve;
    });
    for (const scope of this.held)
      if (!scope.crashed.signal.aborted) scope.crashed.abort(new ShutdownInterruption());
    return done;
  }

  /**
   * Fails the request whose code raised `err` (for the process's `uncaughtException` and
   * `unhandledRejection`); false when no request did.
   */
  failRequest(err: unknown): boolean {
    const scope = this.scopes.getStore();
    if (!scope) return false;
    const { res } = scope;
    const requestId = res ? String(res.locals.requestId ?? "") : scope.requestId;
    this.log.error(
      {
        err,
        request_id: requestId,
        path: pathForLog(
          res ? (res.req as HttpRequest).originalUrl : scope.url,
          this.redactSecrets,
        ),
      },
      "uncaught exception while serving a request: that request failed, the process goes on",
    );
    if (scope.crashed.signal.aborted) return true;
    scope.crashed.abort(err);
    if (scope.holders > 0 || !res) return true;
    if (!res.headersSent) {
      sendJson(
        res,
        500,
        errorBody(new ApiError("internal_error", "An internal error occurred."), requestId),
      );
    } else if (!res.writableEnded) {
      res.destroy();
    }
    return true;
  }
}

/**
 * Wires the guard to the process. An exception outside any request is written to stderr (a pipe
 * write is synchronous, so it is not lost) and ends the process, as Node's default would.
 */
export function guardProcess(proc: NodeJS.Process, guard: RequestGuard): void {
  const onUncaught = (err: unknown) => {
    if (guard.failRequest(err)) return;
    proc.stderr.write(
      `Toolgate stopped on an uncaught exception outside any request: ${err instanceof Error ? err.stack : String(err)}\n`,
    );
    proc.exit(1);
  };
  proc.on("uncaughtException", onUncaught);
  proc.on("unhandledRejection", onUncaught);
}
