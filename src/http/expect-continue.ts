import type { IncomingMessage, ServerResponse } from "node:http";

/**
 * `Expect: 100-continue` (RFC 9110 §10.1.1): the client holds its body back until the server
 * answers "100 Continue". Node answers it at once, before anything is checked, so a body the
 * gateway then refuses unread (declared over the size limit, not JSON, a client over its rate
 * limit, an unknown route) is sent for nothing. The server hands such requests here instead
 * (`checkContinue`, main.ts), and the 100 goes out only when a body parser is about to read the
 * body: a request refused before that gets its final answer alone, and the client sends no body.
 */
const AWAITS_CONTINUE = Symbol("awaitsContinue");
type Marked = IncomingMessage & { [AWAITS_CONTINUE]?: boolean };

export function markAwaitsContinue(req: IncomingMessage): IncomingMessage {
  (req as Marked)[AWAITS_CONTINUE] = true;
  return req;
}

/**
 * Called by a body parser before it reads: sends the 100 the client waits for, once. A body
 * declared over `limitBytes` is not asked for: the parser's own 413 is returned, to answer at
 * once (the parser would first wait to read and discard a body the client holds back), and the
 * connection closes after it (the unsent body cannot be told from the next request).
 */
export function continueOrRefuse(
  req: IncomingMessage,
  res: ServerResponse,
  limitBytes: number,
): Error | undefined {
  if (!(req as Marked)[AWAITS_CONTINUE]) return undefined;
  (req as Marked)[AWAITS_CONTINUE] = false;
  const length = Number(req.headers["content-length"]);
  if (!(length > limitBytes)) {
    res.writeContinue();
    return undefined;
  }
  res.shouldKeepAlive = false;
  return Object.assign(new Error("The request body is larger than the limit."), {
    status: 413,
    type: "entity.too.large",
    limit: limitBytes,
  });
}
