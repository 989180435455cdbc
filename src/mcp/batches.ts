/**
 * What a JSON-RPC batch must be before the MCP SDK serves it. Each POST to `/mcp` is answered by
 * its own stateless server, whose event stream ends once every request of the POST has had its
 * response; two batches kept that stream from answering what it ran:
 *
 * - A request id used twice: the SDK ran (and the gateway charged) both tool calls but answers
 *   one id once, so one paid result was lost. MCP forbids reusing an id within a session; such a
 *   batch is refused whole (-32600, 400) before anything runs.
 * - A request and the cancellation of that same request: the SDK drops the cancelled request's
 *   response, so the stream waited for it forever (keep-alives, never an end), though the call
 *   had run and been charged. A cancellation can only name a request of its own POST here, and
 *   MCP lets a receiver ignore one, so such cancellations are dropped and the request answered.
 */
export type BatchCheck = { body: unknown } | { refused: string };

/**
 * The MCP SDK's own cap on a batch (it refuses a larger one whole). Checked here, before the
 * door counts the batch's messages against the rate limit: a batch nothing of which would run
 * spent the caller's window.
 */
export const MAX_BATCH_MESSAGES = 100;

export function checkBatch(body: unknown): BatchCheck {
  if (!Array.isArray(body)) return { body };
  if (body.length > MAX_BATCH_MESSAGES)
    return { refused: `Invalid Request: Batch must not exceed ${MAX_BATCH_MESSAGES} messages` };
  const ids = new Set<unknown>();
  for (const message of body) {
    if (!isRequest(message)) continue;
    const id = idKey(message.id);
    if (ids.has(id))
      return {
        refused: `Bad Request: JSON-RPC batch repeats the request id ${JSON.stringify(message.id).slice(0, 40)}`,
      };
    ids.add(id);
  }
  const ownRequest = (requestId: unknown) => ids.has(idKey(requestId));
  return {
    body: body.filter(
      (message) =>
        // A notification only: a request that names this method (it has an id) is answered
        // like any other request, -32601 (JSON-RPC answers every message with an id).
        !(
          isMessage(message) &&
          message.id === undefined &&
          message.method === "notifications/cancelled" &&
          ownRequest((message.params as { requestId?: unknown } | undefined)?.requestId)
        ),
    ),
  };
}

/** A request id as a set key: JSON-RPC ids are strings or numbers, and 1 and "1" are different ids. */
const idKey = (id: unknown) => (typeof id === "string" ? `s:${id}` : id);

type Message = { method?: unknown; id?: unknown; params?: unknown };
const isMessage = (message: unknown): message is Message =>
  typeof message === "object" && message !== null;
const isRequest = (message: unknown): message is Message =>
  isMessage(message) && typeof message.method === "string" && message.id !== undefined;
