/**
 * The floor under a keyed call: what the least a gateway can do costs — read the call, one
 * EVALSHA, forward it to the tool worker, answer — in CPU per call, measured the same way as
 * `npm run bench` (from /proc/<pid>/stat over the same calls, the worker's CPU beside it).
 * Three minimal gateways, each its own process, in alternating rounds:
 *
 *   node      Node's request and response objects as they come (how the keyed lane serves)
 *   express   the same handler behind express (one route)
 *   prototype the same handler on Node's objects given express's prototypes and nothing else
 *   proxy     Node's objects, forwarding through the gateway's own forwarder (tools/forward.ts:
 *             http-proxy-middleware) instead of a plain `http.request`
 *
 * It is the measurement behind tools/routes/keyed-lane.ts: the prototype switch alone costs
 * about what express does. Loopback only; bounded by BENCH_CALLS (default 20000) per round.
 *
 *   npm run bench:http-floor      (Redis at 127.0.0.1:6379; BENCH_ROUNDS=2 BENCH_CONCURRENCY=32)
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { Agent, createServer, request, type IncomingMessage, type ServerResponse } from "node:http";
import { createInterface } from "node:readline";
import express from "express";
import { Redis } from "ioredis";
import { spawnService } from "../test/helpers/gateway.js";
import { REDIS_URL } from "../test/helpers/redis.js";
import { createProxyForwarder } from "../src/tools/forward.js";

const CALLS = Number(process.env.BENCH_CALLS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const HASH = JSON.stringify({ text: "benchmark payload", algorithm: "sha256" });
const KINDS = ["node", "express", "prototype", "proxy"] as const;
type Kind = (typeof KINDS)[number];

/** One minimal gateway (run as `http-floor.ts serve <kind> <worker port>`). */
async function serve(kind: Kind, workerPort: number): Promise<void> {
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
  const forwarder = createProxyForwarder(agent);
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
  const server = createServer(listener);
  server.keepAliveTimeout = 65_000;
  server.listen(0, "127.0.0.1", () => {
    const address = server.address();
    console.log(JSON.stringify({ port: typeof address === "object" && address?.port }));
  });
}

const cpuMicros = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
};

/** `count` POSTs over `CONCURRENCY` keep-alive connections; the calls per second. */
async function drive(port: number, path: string, count: number): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  let next = 0;
  let errors = 0;
  const one = (i: number) =>
    new Promise<void>((resolve) => {
      const req = request(
        {
          agent,
          host: "127.0.0.1",
          port,
          path,
          method: "POST",
          headers: {
            "content-type": "application/json",
            "content-length": HASH.length,
            "x-api-key": `k${i % 25}`,
          },
        },
        (res) => {
          if (res.statusCode !== 200) errors++;
          res.resume().on("end", resolve);
        },
      );
      req.on("error", () => {
        errors++;
        resolve();
      });
      req.end(HASH);
    });
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) await one(next++);
    }),
  );
  agent.destroy();
  if (errors > 0) throw new Error(`${errors} of ${count} calls failed`);
  return count / ((performance.now() - started) / 1000);
}

async function startFloor(
  kind: Kind,
  workerPort: number,
): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", new URL(import.meta.url).pathname, "serve", kind, String(workerPort)],
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

async function main(): Promise<void> {
  const workers = await spawnService("src/workers/main.ts", "workers listening", {
    PORT: "0",
    LOG_LEVEL: "info",
  });
  workers.child.stdout!.resume();
  const workerPort = Number(new URL(workers.url).port);
  const results = new Map<Kind, { gateway: number[]; worker: number[]; rps: number[] }>(
    KINDS.map((k) => [k, { gateway: [], worker: [], rps: [] }]),
  );
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const kind of KINDS) {
        const floor = await startFloor(kind, workerPort);
        try {
          await drive(floor.port, "/v1/tools/hash", 3000); // warm-up (JIT, connections)
          const before = {
            gateway: cpuMicros(floor.child.pid!),
            worker: cpuMicros(workers.child.pid!),
          };
          const rps = await drive(floor.port, "/v1/tools/hash", CALLS);
          const r = results.get(kind)!;
          r.gateway.push((cpuMicros(floor.child.pid!) - before.gateway) / CALLS);
          r.worker.push((cpuMicros(workers.child.pid!) - before.worker) / CALLS);
          r.rps.push(rps);
        } finally {
          floor.child.kill("SIGTERM");
        }
      }
    }
  } finally {
    await workers.stop();
  }
  const list = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(" / ");
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  console.log(
    `\nMinimal gateways (one EVALSHA, one forwarded hash call), ${CALLS} calls ${CONCURRENCY} at a time, ${ROUNDS} alternating rounds`,
  );
  console.log(
    `${"".padEnd(10)} ${"gateway µs/call".padStart(18)} ${"worker µs/call".padStart(16)} ${"req/s".padStart(14)}`,
  );
  for (const kind of KINDS) {
    const r = results.get(kind)!;
    console.log(
      `${kind.padEnd(10)} ${list(r.gateway).padStart(18)} ${list(r.worker).padStart(16)} ${list(r.rps).padStart(14)}`,
    );
  }
  const node = mean(results.get("node")!.gateway);
  for (const kind of ["express", "prototype", "proxy"] as const)
    console.log(
      `${kind} / node, gateway CPU per call: ${(mean(results.get(kind)!.gateway) / node).toFixed(2)}×`,
    );
}

if (process.argv[2] === "serve") void serve(process.argv[3] as Kind, Number(process.argv[4]));
else
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
