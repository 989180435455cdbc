/**
 * The `fetch` the chain clients' JSON-RPC client uses (rpc-transport.ts): one POST over node:http
 * or node:https on kept-alive connections, answered with the few parts of a `Response` that
 * viem's HTTP JSON-RPC client reads (`ok`, `status`, `statusText`, `headers.get`, and the body as
 * text, `body` being null).
 *
 * Why not the global fetch: undici's fetch builds a Request, a Response, web streams and a
 * Headers object for every JSON-RPC round trip, which took as much of the gateway's CPU per paid
 * call as everything viem itself does (profile of `npm run bench:paid`). Node's own client reads
 * the same answer for well under half the CPU (a batched read against anvil: 60–107 µs per call
 * against 102–232 µs; docs/decisions.md). No redirects are followed and no compression is asked
 * for: a JSON-RPC endpoint answers its POST itself, uncompressed unless the client asks.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";

/** The largest answer read (viem's own default): an RPC answering more is refused, not buffered. */
export const MAX_RPC_RESPONSE_BYTES = 10_485_760;

/** How long a kept-alive connection may stay idle before it is closed. */
const IDLE_CONNECTION_MS = 4_000;

type RpcFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** A fetch for JSON-RPC POSTs with its own kept-alive connections (one pool per chain client). */
export function rpcFetch(): RpcFetch {
  // An idle connection is closed after 4 s (undici's default), sooner when the server's
  // `Keep-Alive: timeout=…` says so: reusing one the server has just closed would fail the request.
  const kept = { keepAlive: true, timeout: IDLE_CONNECTION_MS };
  const agents = { http: new HttpAgent(kept), https: new HttpsAgent(kept) };
  return (input, init = {}) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(String(input));
      const secure = url.protocol === "https:";
      const req = (secure ? httpsRequest : httpRequest)(
        url,
        {
          method: init.method ?? "POST",
          headers: init.headers as Record<string, string>,
          agent: secure ? agents.https : agents.http,
          signal: init.signal ?? undefined,
        },
        (res) => readAnswer(res).then(resolve, reject),
      );
      req.on("error", reject);
      req.end(init.body as string | undefined);
    });
}

/** The answer as viem reads it, refused past MAX_RPC_RESPONSE_BYTES. */
function readAnswer(res: IncomingMessage): Promise<Response> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_RPC_RESPONSE_BYTES) {
        res.destroy();
        reject(new Error(`the RPC's answer is larger than ${MAX_RPC_RESPONSE_BYTES} bytes`));
      } else chunks.push(chunk);
    });
    res.on("error", reject);
    res.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const status = res.statusCode ?? 0;
      const headers = res.headers;
      resolve({
        ok: status >= 200 && status < 300,
        status,
        statusText: res.statusMessage ?? "",
        headers: {
          get: (name: string) => {
            const value = headers[name.toLowerCase()];
            return value === undefined ? null : String(value);
          },
        },
        body: null,
        text: () => Promise.resolve(text),
      } as unknown as Response);
    });
  });
}
