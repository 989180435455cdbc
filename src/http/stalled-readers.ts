import type { Socket } from "node:net";
import type { Logger } from "pino";
import type { Metrics } from "./metrics.js";

/** Told of each client cut off for not reading its answer: how much of it was still unsent. */
export type RecordCut = (cut: { unsentBytes: number }) => void;

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
export function cutStalledReader(socket: Socket, record?: RecordCut): void {
  // The response being written on this connection (Node's own field; client-errors.ts reads it too).
  const inFlight = (socket as Socket & { _httpMessage?: unknown })._httpMessage;
  if (inFlight && socket.writableLength === 0) return;
  // An idle connection's close is routine (keep-alive); a stalled reader's is told.
  if (inFlight) record?.({ unsentBytes: socket.writableLength });
  socket.destroy();
}

/**
 * Counts a stalled reader's cut-off (`toolgate_stalled_readers_cut_total`) and writes one line to
 * the request log: an operator sees clients that stop reading (a broken proxy, a flood of them),
 * and how much of their answers they left in our memory until then.
 */
export function recordCuts(requestLog: Logger, metrics: Metrics): RecordCut {
  return ({ unsentBytes }) => {
    metrics.stalledReadersCut.inc();
    requestLog.info(
      { reason: "stalled_reader", unsent_bytes: unsentBytes },
      "connection cut: the client stopped reading its answer",
    );
  };
}
