/**
 * The floor under a keyed call: what the least a gateway can do costs — read the call, one
 * EVALSHA, forward it to the tool worker, answer — in CPU per call, measured the same way as
 * `npm run bench` (from /proc/<pid>/stat over the same calls, the worker's CPU beside it).
 * The minimal gateways of bench/floor-gateway.ts (node, express, prototype, proxy), each its own
 * process, in alternating rounds.
 *
 * It is the measurement behind tools/routes/keyed-lane.ts: the prototype switch alone costs
 * about what express does. Loopback only; bounded by BENCH_CALLS (default 20000) per round.
 *
 *   npm run bench:http-floor      (Redis at 127.0.0.1:6379; BENCH_ROUNDS=2 BENCH_CONCURRENCY=32)
 */
import { Agent, request } from "node:http";
import { spawnService } from "../test/helpers/gateway.js";
import { cpuMicros } from "./process-cpu.js";
import { FLOOR_KINDS as KINDS, startFloor, type FloorKind } from "./floor-gateway.js";

const CALLS = Number(process.env.BENCH_CALLS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const HASH = JSON.stringify({ text: "benchmark payload", algorithm: "sha256" });

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

async function main(): Promise<void> {
  const workers = await spawnService("src/workers/main.ts", "workers listening", {
    PORT: "0",
    LOG_LEVEL: "info",
  });
  workers.child.stdout!.resume();
  const workerPort = Number(new URL(workers.url).port);
  const results = new Map<FloorKind, { gateway: number[]; worker: number[]; rps: number[] }>(
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

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
