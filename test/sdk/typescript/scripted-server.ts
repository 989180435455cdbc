import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";

/** What a scripted server received: method, path with query, headers as sent (raw pairs), body. */
export interface Received {
  method: string;
  url: string;
  headers: Record<string, string>;
  /** Every header line as sent, names as written, repeats kept. */
  rawHeaders: [string, string][];
  body: string;
}

/**
 * The answer to the n-th request (0-based): status, headers and a body (an object is sent as
 * JSON), or "reset" to cut the connection once the request has been read whole.
 */
export type Script = (
  request: Received,
  n: number,
) => { status: number; headers?: Record<string, string>; body?: unknown } | "reset";

/**
 * A real HTTP server on loopback (a port the kernel picks) that answers as `script` says and
 * records every request it received, for the library and the CLI to be run against as a user runs
 * them: no mock of our own code.
 */
export async function scriptedServer(script: Script) {
  const received: Received[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      const rawHeaders: [string, string][] = [];
      for (let i = 0; i < req.rawHeaders.length; i += 2)
        rawHeaders.push([req.rawHeaders[i]!, req.rawHeaders[i + 1]!]);
      const request: Received = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers as Record<string, string>,
        rawHeaders,
        body,
      };
      const answer = script(request, received.length);
      received.push(request);
      if (answer === "reset") {
        req.socket.resetAndDestroy();
        return;
      }
      const text =
        answer.body === undefined
          ? ""
          : typeof answer.body === "string"
            ? answer.body
            : JSON.stringify(answer.body);
      res.writeHead(answer.status, { "content-type": "application/json", ...answer.headers });
      res.end(text);
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The gateway's account answer: every field the libraries require (shape.ts, Python's Account). */
export const ACCOUNT = {
  id: "acct_1",
  email: null,
  email_verified: false,
  tier: "free",
  credits: 10,
  credits_low_threshold: 2,
  rate_limit_per_minute: 60,
  features: [],
};

/** A tool call's successful answer, as the gateway gives it (1 credit charged). */
export const CALLED = {
  status: 200,
  headers: { "x-credits-charged": "1", "x-credits-remaining": "99", "x-request-id": "req_test" },
  body: { digest: "abc" },
};
