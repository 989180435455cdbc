/**
 * The least a gateway can do for a keyed call — read the call, one EVALSHA, forward it to the tool
 * worker, answer — in a few kinds, each run in its own process (`startFloor`). The floor the
 * benches set the gateway beside (`npm run bench:http-floor`, `npm run bench`):
 *
 *   node      Node's request and response objects as they come (how the keyed lane serves)
 *   express   the same handler behind express (one route)
 *   prototype the same handler on Node's objects given express's prototypes and nothing else
 *   proxy     Node's objects, forwarding through the gateway's own forwarder (tools/forward.ts:
 *             http-proxy-middleware) instead of a plain `http.request`
 */
import { spawn, type ChildProcess } from "node:child_process";
import { Agent, createServer, request, type IncomingMessage, type ServerResponse } from "node:http";
import { createInterface } from "node:readline";
import express from "express";
import { Redis } from "ioredis";
import { REDIS_URL } from "../test/helpers/redis.js";
import { createProxyForwarder } from "../src/tools/forward.js";

export const FLOOR_KINDS = ["node", "express", "prototype", "proxy"] as const;
export type FloorKind = (typeof FLOOR_KINDS)[number];

/** One minimal gateway (run as `floor-gateway.ts <kind> <worker port>`). */
async function serve(kind: FloorKind, workerPort: number): Promise<void> {
  const redis = new Redis(REDIS_URL);
  const sha = (await redis.script(
    "LOAD",
    "redis.call('INCR', KEYS[1]); return {1, 100}",
  )) as string;
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const input = JSON.stringify(JSON.parse(Buffer.concat(chunks).toString("utf8")));
    const [, balance] = (await redis.evalsha(
      sha,
      1,
      `bench-floor:${req.headers["x-api-key"]}`,
    )) as number[];
    const [status, body] =
      kind === "proxy" ? await proxied(req, res, input) : await requested(input);
    res.writeHead(status, {
      "content-type": "application/json",
      "content-length": body.length,
      "x-credits-remaining": String(balance),
    });
    res.end(body);
  };
  const forwarder = createProxyForwarder(agent, 256 * 1024 * 1024);
  const proxied = async (
    req: IncomingMessage,
    res: ServerResponse,
    input: string,
  ): Promise<[number, Buffer]> => {
    const outcome = await forwarder(
      req,
      res,
    )({
      origin: `http://127.0.0.1:${workerPort}`,
      path: "/tools/hash",
      input: JSON.parse(input),
      requestId: "req_bench",
      timeoutMs: 10_000,
    });
    if (outcome.kind !== "response") throw new Error(`forwarding failed: ${outcome.kind}`);
    return [outcome.status, outcome.body];
  };
  const requested = (input: string) =>
    new Promise<[number, Buffer]>((resolve, reject) => {
      const upstream = request(
        {
          agent,
          host: "127.0.0.1",
          port: workerPort,
          path: "/tools/hash",
          method: "POST",
          headers: { "content-type": "application/json", "content-length": input.length },
        },
        (answer) => {
          const parts: Buffer[] = [];
          answer.on("data", (c: Buffer) => parts.push(c));
          answer.on("end", () => resolve([answer.statusCode ?? 502, Buffer.concat(parts)]));
        },
      );
      upstream.on("error", reject);
      upstream.end(input);
    });
  const app = express();
  app.post("/v1/tools/:name", (req, res) => void handle(req, res));
  const listener =
    kind === "express"
      ? app
      : kind === "prototype"
        ? (req: IncomingMessage, res: ServerResponse) => {
            Object.setPrototypeOf(req, app.request);
            Object.setPrototypeOf(res, app.response);
            void handle(req, res);
          }
        : (req: IncomingMessage, res: ServerResponse) => void handle(req, res);
  // Exits normally when stopped, so a --cpu-prof profile (BENCH_PROFILE) gets written.
  process.once("SIGTERM", () => process.exit(0));
  const server = createServer(listener);
  server.keepAliveTimeout = 65_000;
  server.listen(0, "127.0.0.1", () => {
    const address = server.address();
    console.log(JSON.stringify({ port: typeof address === "object" && address?.port }));
  });
}

/** Starts a minimal gateway of this kind in its own process, in front of the worker at `workerPort` (`nodeArgs`: flags for its node). */
export async function startFloor(
  kind: FloorKind,
  workerPort: number,
  nodeArgs: string[] = [],
): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(
    process.execPath,
    [...nodeArgs, "--import", "tsx", new URL(import.meta.url).pathname, kind, String(workerPort)],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once("line", (line) =>
      resolve((JSON.parse(line) as { port: number }).port),
    );
    child.once("exit", (code) => reject(new Error(`the ${kind} gateway exited with ${code}`)));
  });
  return { child, port };
}

if (process.argv[1] === new URL(import.meta.url).pathname)
  void serve(process.argv[2] as FloorKind, Number(process.argv[3]));
