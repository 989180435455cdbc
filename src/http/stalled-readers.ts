import type { Socket } from "node:net";

/**
 * A client that stops reading its answer would otherwise hold its connection, and the answer's
 * unsent bytes in our memory, for ever: Node's header and request timeouts end once the request
 * is in, and its keep-alive timeout starts only once the answer is out. So the server's socket
 * timeout (`server.timeout` = SEND_TIMEOUT_MS) is set, and this `timeout` listener judges each
 * silence it reports (Node does not report one while a write is still draining, however slowly):
 * - bytes of an answer still waiting to go out: the client stopped reading — cut it off;
 * - a response in flight with nothing waiting: the client is waiting for us (a slow tool call, a
 *   quiet live feed or MCP stream) — never the client's fault, however long, so it is kept;
 * - nothing in flight: an idle connection (Node's keep-alive timeout is reported through this
 *   same event) — closed, as Node does when nobody listens.
 */
export function cutStalledReader(socket: Socket): void {
  // The response being written on this connection (Node's own field; client-errors.ts reads it too).
  const inFlight = (socket as Socket & { _httpMessage?: unknown })._httpMessage;
  if (inFlight && socket.writableLength === 0) return;
  socket.destroy();
}
