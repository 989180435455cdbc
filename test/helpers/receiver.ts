import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import { join } from "node:path";
import type { IncomingHttpHeaders } from "node:http";

/**
 * A real HTTPS webhook receiver (certificate from the test CA) that records every request with
 * its raw body and arrival time, and answers each path from a script: a status code, "hang"
 * (never answer), or "redirect".
 */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
  at: number;
}

export type Answer = number | "hang" | "redirect";

export async function startReceiver() {
  const dir = process.env.TEST_TLS_DIR;
  if (!dir) throw new Error("TEST_TLS_DIR is not set: the TLS global setup did not run");
  const received: Received[] = [];
  const scripts = new Map<string, Answer[]>();
  const server: Server = createServer(
    { key: readFileSync(join(dir, "server.key")), cert: readFileSync(join(dir, "server.pem")) },
    (req, res) => {
      let raw = "";
      req.setEncoding("utf8");
      req.on("data", (c) => (raw += c));
      req.on("end", () => {
        const path = req.url ?? "/";
        received.push({ path, headers: req.headers, raw, at: Date.now() });
        const script = scripts.get(path);
        const answer = script && script.length > 1 ? script.shift()! : (script?.[0] ?? 200);
        if (answer === "hang") return; // no answer: the sender's timeout must fire
        if (answer === "redirect") {
          res.writeHead(302, { location: `https://localhost:${port}${path}-moved` });
          return res.end();
        }
        res.writeHead(answer, { "content-type": "text/plain" });
        res.end("ok");
      });
    },
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    url: (path: string) => `https://localhost:${port}${path}`,
    received,
    /** Answers for `path`, in order; the last one repeats. */
    script(path: string, answers: Answer[]) {
      scripts.set(path, [...answers]);
    },
    at: (path: string) => received.filter((r) => r.path === path),
    async waitFor(path: string, count: number, timeoutMs = 20_000): Promise<Received[]> {
      const deadline = Date.now() + timeoutMs;
      while (received.filter((r) => r.path === path).length < count && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 25));
      return received.filter((r) => r.path === path);
    },
    /** The first request to `path` whose JSON body satisfies `match`, once it arrives. */
    async waitForBody(
      path: string,
      match: (body: any) => boolean,
      timeoutMs = 20_000,
    ): Promise<Received | undefined> {
      const deadline = Date.now() + timeoutMs;
      const find = () => received.find((r) => r.path === path && match(JSON.parse(r.raw)));
      while (!find() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      return find();
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
