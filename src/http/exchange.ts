import type { IncomingMessage, ServerResponse } from "node:http";

/**
 * A request and its response as the hot path reads and writes them: Node's own objects. The keyed
 * tool call is served on them directly (tools/routes/keyed-lane.ts), every other route on
 * express's, which extend them — so the code both share (the request context, the tool call,
 * error answers) is written against these types and uses only Node's API.
 */
export type HttpRequest = IncomingMessage & { originalUrl: string; body?: unknown };
export type HttpResponse = ServerResponse & { locals: Record<string, unknown> };

/**
 * Already-serialised JSON, written as is: what express's `res.type().send()` would send (type,
 * length, no body for HEAD), without its content negotiation and header parsing.
 */
export function sendJsonText(res: HttpResponse, json: string): void {
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", Buffer.byteLength(json));
  res.end(res.req.method === "HEAD" ? undefined : json);
}

/** A value as JSON with its status: what express's `res.status().json()` sends. */
export function sendJson(res: HttpResponse, status: number, value: unknown): void {
  res.statusCode = status;
  sendJsonText(res, JSON.stringify(value));
}

/** A request header's value, by any casing of its name (what express's `req.get` reads). */
export function headerOf(req: Pick<IncomingMessage, "headers">, name: string): string | undefined {
  const value = req.headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(", ") : value;
}
