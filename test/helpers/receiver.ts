import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import { join } from "node:path";
import type { IncomingHttpHeaders, ServerResponse } from "node:http";

/**
 * A real HTTPS webhook receiver (certificate from the test CA) that records every request with
 * its raw body and arrival time, and answers each path from a script: a status code, "hang"
 * (never answer), "redirect", or a 200 followed by a body that never ends — "endless" (as fast as
 * the sender reads) or "trickle" (a byte a second) — whose bytes sent and close time are kept.
 */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
  at: number;
}

export type Answer = number | "hang" | "redirect" | "endless" | "trickle";

/** What an endless answer sent before the sender closed the connection. */
export interface Stream {
  sent: number;
  closedAt: number | null;
}

export async function startReceiver() {
  const dir = process.env.TEST_TLS_DIR;
  if (!dir) throw new Error("TEST_TLS_DIR is not set: the TLS global setup did not run");
  const received: Received[] = [];
  const scripts = new Map<string, Answer[]>();
  const streams = new Map<string, Stream>();
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
        if (answer === "endless" || answer === "trickle") return endless(path, res, answer);
        res.writeHead(answer, { "content-type": "text/plain" });
        res.end("ok");
      });
    },
  );
  function endless(path: string, res: ServerResponse, pace: "endless" | "trickle") {
    const stream: Stream = { sent: 0, closedAt: null };
    streams.set(path, stream);
    res.writeHead(200, { "content-type": "text/plain" });
    const chunk = Buffer.alloc(pace === "endless" ? 16 * 1024 : 1, "x");
    const write = () => {
      if (res.destroyed) return false;
      stream.sent += chunk.length;
      return res.write(chunk);
    };
    // As fast as the socket takes it (waiting for 'drain' when the sender stops reading), or a byte a second.
    const more = () => {
      while (write());
      if (!res.destroyed) res.once("drain", more);
    };
    const timer = pace === "trickle" ? setInterval(write, 1000) : null;
    if (pace === "endless") more();
    res.on("close", () => {
      stream.closedAt = Date.now();
      if (timer) clearInterval(timer);
    });
  }
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
    /** The endless answer sent to `path`, once the sender has closed its connection (or the wait ends). */
    async streamClosed(path: string, timeoutMs = 20_000): Promise<Stream | undefined> {
      const deadline = Date.now() + timeoutMs;
      while (!streams.get(path)?.closedAt && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 25));
      return streams.get(path);
    },
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
