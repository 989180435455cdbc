import { Agent, request } from "node:https";
import { clip } from "../lib/readable-text.js";
import type { StoreAgnosticWebhook } from "./types.js";
import type { ResolveHost } from "./resolve-host.js";
import { guardAgent } from "./ssrf.js";
import { specSignature, standardSignature } from "./signing.js";

/**
 * One delivery attempt: POST the envelope's exact bytes with the specified headers and the
 * Standard Webhooks ones; 2xx = delivered. No redirects are followed (node:https never does),
 * the answer must start within 10 s of the receiver's address being known, and the connection is
 * made through the SSRF guard (whose own DNS wait has its own deadline, `DNS_TIMEOUT_MS`).
 */
export const DELIVERY_TIMEOUT_MS = 10_000;
/**
 * The most of a receiver's answer body read (and thrown away) to keep its connection for the next
 * delivery: an acknowledgement is far smaller. Past it, or past the deadline, the connection is
 * dropped, so a receiver that streams without end cannot hold a socket or make us download it.
 */
export const MAX_ANSWER_BODY_BYTES = 64 * 1024;
export const USER_AGENT = "Toolgate-Webhook/1.0";
/**
 * The most of a redirect's Location kept in the delivery log: enough to recognise it; the
 * receiver chooses it, and each of thousands of log entries would otherwise store all of it.
 */
export const SHOWN_LOCATION_CHARS = 200;

export interface AttemptResult {
  status: number | null;
  durationMs: number;
  error: string | null;
}

export function createDeliveryAgent(allowPrivate: boolean, resolveHost?: ResolveHost): Agent {
  return guardAgent(new Agent({ keepAlive: true, maxSockets: 64 }), allowPrivate, resolveHost);
}

export function deliveryHeaders(
  webhook: StoreAgnosticWebhook,
  envelope: { id: string; event: string; timestamp: string },
  body: string,
  nowSeconds = Math.floor(Date.now() / 1000),
): Record<string, string> {
  const secrets = [webhook.secret, ...(webhook.previousSecret ? [webhook.previousSecret] : [])];
  return {
    "content-type": "application/json",
    "user-agent": USER_AGENT,
    "x-webhook-id": envelope.id,
    "x-webhook-event": envelope.event,
    "x-webhook-signature": specSignature(webhook.secret, body),
    "x-webhook-timestamp": envelope.timestamp,
    "webhook-id": envelope.id,
    "webhook-timestamp": String(nowSeconds),
    "webhook-signature": secrets
      .map((s) => standardSignature(s, envelope.id, nowSeconds, body))
      .join(" "),
  };
}

export function attempt(
  agent: Agent,
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<AttemptResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    let settled = false;
    const done = (status: number | null, error: string | null) => {
      if (settled) return;
      settled = true;
      resolve({ status, durationMs: Date.now() - started, error });
    };
    const payload = Buffer.from(body, "utf8");
    const req = request(
      url,
      { method: "POST", agent, headers: { ...headers, "content-length": String(payload.length) } },
      (res) => {
        // The status line decides the outcome; the body is only drained, within the cap and the
        // deadline (still running), so the socket can be reused. Errors from cutting it are moot.
        let read = 0;
        res.on("data", (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_ANSWER_BODY_BYTES) res.destroy();
        });
        res.on("error", () => {});
        const location =
          res.statusCode && res.statusCode >= 300 && res.statusCode < 400
            ? ` (redirect to ${clip(res.headers.location ?? "?", SHOWN_LOCATION_CHARS)} not followed)`
            : "";
        done(res.statusCode ?? null, location ? `HTTP ${res.statusCode}${location}` : null);
      },
    );
    // One deadline for the whole exchange, from the connection to the answer's last byte: a socket
    // idle timer would let a receiver that stalls the TLS handshake, or trickles its answer a byte
    // at a time, hold a delivery (or its socket) past the specification's 10 seconds.
    const giveUp = () => req.destroy(new Error(`no answer within ${DELIVERY_TIMEOUT_MS / 1000} s`));
    let deadline = setTimeout(giveUp, DELIVERY_TIMEOUT_MS);
    // A new connection to a name first waits on our own DNS, which is no fault of the receiver's:
    // its 10 s restart once the address is known (the wait is capped by the guard's DNS deadline,
    // and fails with its own message). A reused socket, or an IP literal, has no lookup.
    const restart = () => {
      clearTimeout(deadline);
      deadline = setTimeout(giveUp, DELIVERY_TIMEOUT_MS);
    };
    req.once("socket", (socket) => {
      socket.once("lookup", restart);
      req.once("close", () => socket.off("lookup", restart));
    });
    req.on("close", () => clearTimeout(deadline));
    req.on("error", (err) => done(null, err.message));
    req.end(payload);
  });
}
