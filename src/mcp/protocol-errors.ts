import {
  type JSONRPCRequest,
  ProtocolError,
  ProtocolErrorCode,
  type Result,
  Server,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { ApiError } from "../http/errors.js";

/**
 * The SDK's `Server`, with its errors told apart by whose they are.
 *
 * The SDK checks a request's params against the method's wire schema before our handler runs,
 * and a mismatch came back as -32603 (internal error) for `initialize`, `tools/list` and the rest
 * (it throws a plain `Error`), or -32602 for `tools/call`, either way with zod's issue list dumped
 * as the message. The caller sent bad input: here it gets -32602 (invalid params) with the first
 * issue in one short line (`params.protocolVersion: expected string`), clipped so that a huge key
 * or value is never echoed back. What goes wrong once our handler has run is ours: -32603 with a
 * message made for the caller (an `ApiError`'s) or "Internal error", the detail logged.
 */
export class GatewayServer extends Server {
  constructor(
    info: ConstructorParameters<typeof Server>[0],
    options: ConstructorParameters<typeof Server>[1],
    private readonly reportInternal: (method: string, err: unknown) => void,
  ) {
    super(info, options);
  }

  protected override _wrapHandler(
    method: string,
    handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>,
  ): (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result> {
    const served = super._wrapHandler(method, handler);
    return async (request, ctx) => {
      try {
        return await served(request, ctx);
      } catch (err) {
        // `reportInternal` is read here, not in the constructor: the SDK's constructor registers
        // its own handlers (initialize, ping) before this class's fields are set.
        throw handlersReached.has(ctx.mcpReq.signal)
          ? ourFailure(method, err, this.reportInternal)
          : callersMistake(method, err);
      }
    };
  }
}

/** Requests whose own handler (ours, past the SDK's params check) has started, by their abort signal (one per message). */
const handlersReached = new WeakSet<AbortSignal>();

/** Marks one of our request handlers, so that what it throws (or what fails after it) is known to be ours, not the caller's. */
export function ownHandler<Req, Res>(
  handle: (request: Req, ctx: ServerContext) => Promise<Res>,
): (request: Req, ctx: ServerContext) => Promise<Res> {
  return (request, ctx) => {
    handlersReached.add(ctx.mcpReq.signal);
    return handle(request, ctx);
  };
}

/** Before our handler ran: the SDK refused the params (or the protocol state), which the caller sent. */
function callersMistake(method: string, err: unknown): ProtocolError {
  if (err instanceof ProtocolError && err.code !== ProtocolErrorCode.InvalidParams) {
    return err; // the SDK's own protocol answers (unsupported version, wrong era…) stand as they are
  }
  const message = err instanceof Error ? err.message : "";
  const issue = firstIssue(message);
  if (issue) {
    const where = issue.path.map((segment) => clip(String(segment), 40)).join(".");
    const more = issue.others > 0 ? ` (and ${issue.others} more)` : "";
    return new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `Invalid params for ${clip(method, 60)}: ${where ? `${where}: ` : ""}${clip(issue.message, 120)}${more}.`,
    );
  }
  // A short message of the SDK's own making (e.g. "Invalid or expired requestState") says it best.
  if (err instanceof ProtocolError && message.length <= 200) return err;
  return new ProtocolError(
    ProtocolErrorCode.InvalidParams,
    `Invalid params for ${clip(method, 60)}.`,
  );
}

/** Once our handler ran: a failure of ours (a result that does not fit the schema, a bug, a dependency). */
function ourFailure(
  method: string,
  err: unknown,
  report: (method: string, err: unknown) => void,
): ProtocolError {
  // A store or dependency failure is an ApiError whose message is written for callers.
  if (err instanceof ApiError) {
    return new ProtocolError(ProtocolErrorCode.InternalError, err.message);
  }
  report(method, err);
  return new ProtocolError(ProtocolErrorCode.InternalError, "Internal error");
}

/**
 * The first of the issues zod lists in the SDK's message (a JSON array, after any prefix such as
 * "Invalid tools/call request: "), or null when the message holds none.
 */
function firstIssue(
  message: string,
): { path: readonly unknown[]; message: string; others: number } | null {
  const start = message.indexOf("[");
  if (start < 0) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(message.slice(start));
  } catch {
    return null;
  }
  if (!Array.isArray(parsed)) return null;
  const issues = parsed.filter(
    (i): i is { path: unknown[]; message: string } =>
      typeof i === "object" &&
      i !== null &&
      Array.isArray((i as { path?: unknown }).path) &&
      typeof (i as { message?: unknown }).message === "string",
  );
  const [first] = issues;
  if (!first) return null;
  // zod's "Invalid input: expected string, received number": the prefix adds nothing here.
  const said = first.message.replace(/^Invalid input: /, "");
  return { path: first.path, message: said, others: issues.length - 1 };
}

const clip = (text: string, max: number) =>
  text.length <= max ? text : `${text.slice(0, max - 1)}…`;
