import { readFileSync } from "node:fs";
import {
  createServer as createHttpServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { join } from "node:path";

/**
 * A real tool endpoint on loopback — HTTPS with a certificate from the test CA, or plain HTTP —
 * such as a Business account or an operator would register: each path answers from a handler
 * (status and JSON), or hangs; every request is recorded with its headers, JSON body and raw body.
 */
export type EndpointAnswer = { status?: number; json?: unknown; raw?: string } | "hang";

export async function startToolEndpoint(protocol: "https" | "http" = "https") {
  const received: { path: string; headers: IncomingHttpHeaders; body: unknown; raw: string }[] = [];
  const handlers = new Map<string, (body: any) => EndpointAnswer>();
  const serve = (req: IncomingMessage, res: ServerResponse) => {
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      const path = req.url ?? "/";
      let body: unknown = raw;
      try {
        body = JSON.parse(raw);
      } catch {
        /* recorded as text */
      }
      received.push({ path, headers: req.headers, body, raw });
      const answer = handlers.get(path)?.(body) ?? { status: 404, json: { error: "no such path" } };
      if (answer === "hang") return;
      res.writeHead(answer.status ?? 200, { "content-type": "application/json" });
      res.end(answer.raw ?? JSON.stringify(answer.json ?? {}));
    });
  };
  let server: ReturnType<typeof createHttpServer> | ReturnType<typeof createHttpsServer>;
  if (protocol === "https") {
    const dir = process.env.TEST_TLS_DIR;
    if (!dir) throw new Error("TEST_TLS_DIR is not set: the TLS global setup did not run");
    server = createHttpsServer(
      { key: readFileSync(join(dir, "server.key")), cert: readFileSync(join(dir, "server.pem")) },
      serve,
    );
  } else server = createHttpServer(serve);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    url: (path: string) =>
      `${protocol}://${protocol === "https" ? "localhost" : "127.0.0.1"}:${port}${path}`,
    received,
    at: (path: string) => received.filter((r) => r.path === path),
    handle(path: string, handler: (body: any) => EndpointAnswer) {
      handlers.set(path, handler);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
