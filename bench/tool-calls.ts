/**
 * Keyed tool calls through the gateway (Redis store) against the same calls sent straight to
 * the worker, in one run: throughput of both and their ratio, the latency the gateway adds
 * (p50/p99), Redis round trips per call (counted with MONITOR, script-internal commands
 * excluded; also for calls carrying an Idempotency-Key, as the client libraries send them), and the Redis bytes a call leaves once the books are exported. Loopback only;
 * bounded by BENCH_CALLS.
 *
 *   npm run bench            (Redis at 127.0.0.1:6379; BENCH_CALLS=20000 BENCH_CONCURRENCY=32)
 *   BENCH_PROFILE=/tmp/prof  also writes CPU profiles (.cpuprofile) of the gateway and the minimal proxy there
 *   BENCH_NODE_ARGS="…"      more flags for the gateway's and the minimal proxy's node (e.g. --perf-basic-prof)
 *   BENCH_GATEWAY_ENTRY=…    the gateway to measure (default dist/src/main.js once built, else src/main.ts)
 *   BENCH_BASELINE_ENTRY=…   another build's entry (e.g. main's dist/src/main.js) measured in the same run, in
 *                            alternating rounds (BENCH_ROUNDS, default 3): CPU per call, latency added, cold start
 *   BENCH_QR_CALLS=0         skips the qr-code comparison (shorter A/B runs)
 *   BENCH_LATENCY_ROUNDS=3   rounds of one-at-a-time calls, straight, through the gateway and through
 *                            the minimal proxy in turn (pooled; each round's figures printed too)
 *   BENCH_WARMUP=2000        calls sent to each process before it is measured (JIT: the optimising
 *                            compiler's threads count in a process's CPU time, so a short warm-up
 *                            measures compilation as much as the calls)
 *
 * Also: the CPU time the gateway and the worker each spend per call over the same calls (from
 * /proc/<pid>/stat); the same calls through a minimal Node proxy (bench/floor-gateway.ts: one
 * EVALSHA, one forward, nothing else), so the gateway's cost stands beside the least any gateway
 * costs on this machine; throughput with WEB_CONCURRENCY=1 and 2, and the cold start of the compiled
 * build (`npm run build` first): process start → /readyz 200, and the CPU the process used by then
 * (on a shared machine the CPU figure is the steadier of the two).
 */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { spawn } from "node:child_process";
import { Agent, request } from "node:http";
import { createInterface } from "node:readline";
import {
  ADMIN_KEY,
  fundedAccount,
  spawnGateway,
  spawnService,
  type GatewayProcess,
} from "../test/helpers/gateway.js";
import {
  freshDatabase,
  startPostgresCluster,
  type PostgresCluster,
} from "../test/helpers/postgres.js";
import { REDIS_URL, dropPrefix, uniquePrefix, watchRedisCommands } from "../test/helpers/redis.js";
import { measureRetainedBytes } from "../test/helpers/redis-bytes.js";
import { readServerTiming } from "../test/helpers/server-timing.js";
import { startFloor } from "./floor-gateway.js";
import { BENCH_NODE_ARGS } from "./node-args.js";
import { cpuMicros } from "./process-cpu.js";
import { median, percentile } from "./stats.js";

const CALLS = Number(process.env.BENCH_CALLS ?? 20_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
/** Unloaded latency is measured one call at a time, on fewer calls, in alternated rounds. */
const LATENCY_CALLS = Math.max(500, Math.floor(CALLS / 10));
const LATENCY_ROUNDS = Number(process.env.BENCH_LATENCY_ROUNDS ?? 3);
const QR_CALLS = Number(process.env.BENCH_QR_CALLS ?? Math.max(1000, Math.floor(CALLS / 4)));
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2000);
const HASH = JSON.stringify({ text: "benchmark payload", algorithm: "sha256" });
/** A tool that does some work of its own (a 256-pixel PNG), as real tools do: who keeps up with it? */
const QR = JSON.stringify({
  text: "https://toolgate.example/v1/tools/qr-code?bench=1",
  format: "png",
  size: 256,
});

interface Run {
  rps: number;
  latencies: number[];
  errors: number;
  /** The gateway's own time per call, as its answers' Server-Timing says (`gateway;dur`), sorted; empty off the gateway. */
  gatewayMs: number[];
}

/** Sends `count` POSTs over `CONCURRENCY` keep-alive connections; `headers(i)` varies per call. */
async function drive(
  url: string,
  body: string,
  count: number,
  headers: (i: number) => Record<string, string>,
  concurrency = CONCURRENCY,
): Promise<Run> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const target = new URL(url);
  const latencies: number[] = [];
  const gatewayMs: number[] = [];
  let next = 0;
  let errors = 0;
  const one = (i: number) =>
    new Promise<void>((resolve) => {
      const started = process.hrtime.bigint();
      const req = request(
        {
          agent,
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: "POST",
          headers: {
            "content-type": "application/json",
            "content-length": Buffer.byteLength(body),
            ...headers(i),
          },
        },
        (res) => {
          res.resume();
          res.on("end", () => {
            if (res.statusCode !== 200) errors++;
            latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
            const own = readServerTiming(String(res.headers["server-timing"] ?? "")).gateway;
            if (own !== undefined) gatewayMs.push(own);
            resolve();
          });
        },
      );
      req.on("error", () => {
        errors++;
        resolve();
      });
      req.end(body);
    });
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await one(next++);
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  agent.destroy();
  return {
    rps: count / seconds,
    latencies: latencies.sort((a, b) => a - b),
    errors,
    gatewayMs: gatewayMs.sort((a, b) => a - b),
  };
}

/** Process start → first /readyz 200 of a compiled build with production settings (no dev chain, workers elsewhere), and the CPU used by then. */
async function coldStart(
  entry: string,
  workersUrl: string,
  prefix: string,
): Promise<{ ms: number; cpuMs: number } | null> {
  if (!existsSync(entry) || !entry.endsWith(".js")) return null;
  const started = performance.now();
  const child = spawn(process.execPath, [entry], {
    env: {
      PATH: process.env.PATH,
      NODE_ENV: "production",
      PORT: "0",
      HOST: "127.0.0.1",
      REDIS_URL,
      REDIS_KEY_PREFIX: prefix,
      WORKERS_URL: workersUrl,
      ADMIN_API_KEY: ADMIN_KEY,
      SECRET_KEY: "s".repeat(32),
      SMTP_URL: "smtp://127.0.0.1:1",
      MAIL_FROM: "no-reply@localhost.example",
      PUBLIC_BASE_URL: "http://localhost:8402",
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on("line", (line) => {
        if (line.includes('"msg":"listening"'))
          resolve((JSON.parse(line) as { port: number }).port);
      });
      child.once("exit", (code) => reject(new Error(`the compiled gateway exited with ${code}`)));
    });
    for (;;) {
      const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) return { ms: performance.now() - started, cpuMs: cpuMicros(child.pid!) / 1000 };
      await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    child.kill("SIGTERM");
  }
}

/** The calls the comparison with a baseline makes: per round and side, the throughput calls (without and with an Idempotency-Key), the one-at-a-time calls; and the warm-up. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BASELINE_CALLS = Math.min(CALLS, 4000);
const baselineCalls = () => ROUNDS * 2 * (2 * BASELINE_CALLS + 500) + 2 * WARMUP;

const list = (xs: number[], digits = 0) => xs.map((x) => x.toFixed(digits)).join(" / ");

async function main() {
  const prefix = uniquePrefix("bench");
  const workers = await spawnService("src/workers/main.ts", "workers listening", {
    PORT: "0",
    LOG_LEVEL: "info",
  });
  workers.child.stdout!.resume();
  const built = new URL("../dist/src/main.js", import.meta.url).pathname;
  const entry = process.env.BENCH_GATEWAY_ENTRY ?? (existsSync(built) ? built : "src/main.ts");
  const baselineEntry = process.env.BENCH_BASELINE_ENTRY ?? null;
  const gateway = await spawnGateway(
    prefix,
    { WORKERS_URL: workers.url, LOG_LEVEL: "info" },
    BENCH_NODE_ARGS,
    entry,
  ).catch(async (err: unknown) => {
    await workers.stop();
    throw err;
  });
  gateway.child.stdout!.resume(); // request logs stay on, as in production; drained, not printed
  try {
    // Business accounts allow 1,000 calls a minute each: spread the calls over enough of them.
    const accounts = await Promise.all(
      Array.from(
        {
          length: Math.ceil(
            (3 * CALLS +
              (LATENCY_ROUNDS + 1) * LATENCY_CALLS +
              QR_CALLS +
              2 * WARMUP +
              1200 +
              (baselineEntry ? baselineCalls() : 0)) /
              900,
          ),
        },
        () => fundedAccount(gateway.url, CALLS + 100, "business"),
      ),
    );
    const keyFor = (i: number) => ({ "x-api-key": accounts[i % accounts.length]!.key });

    // Warm both paths (JIT, connections, script cache).
    await drive(`${workers.url}/tools/hash`, HASH, WARMUP, () => ({}));
    await drive(`${gateway.url}/v1/tools/hash`, HASH, WARMUP, keyFor);
    if (QR_CALLS > 0) {
      await drive(`${workers.url}/tools/qr-code`, QR, 100, () => ({}));
      await drive(`${gateway.url}/v1/tools/qr-code`, QR, 100, keyFor);
    }

    const direct = await drive(`${workers.url}/tools/hash`, HASH, CALLS, () => ({}));
    // The same calls, with the CPU each process spends on them.
    const cpuBefore = {
      gateway: cpuMicros(gateway.child.pid!),
      worker: cpuMicros(workers.child.pid!),
    };
    const through = await drive(`${gateway.url}/v1/tools/hash`, HASH, CALLS, keyFor);
    const cpu = {
      gateway: (cpuMicros(gateway.child.pid!) - cpuBefore.gateway) / CALLS,
      worker: (cpuMicros(workers.child.pid!) - cpuBefore.worker) / CALLS,
    };
    const floor = await measureFloor(workers.url);
    // One call at a time, straight to the worker, through the gateway and through the minimal
    // proxy in turn, LATENCY_ROUNDS times: this machine's tail (a process waiting for a core its
    // three neighbours share) moves from one run to the next and comes to all three alike, so
    // each is measured beside the others, and the rounds are pooled.
    const alone = { direct: [] as Run[], through: [] as Run[], floor: [] as Run[] };
    try {
      for (let round = 0; round < LATENCY_ROUNDS; round++) {
        alone.direct.push(
          await drive(`${workers.url}/tools/hash`, HASH, LATENCY_CALLS, () => ({}), 1),
        );
        alone.through.push(
          await drive(`${gateway.url}/v1/tools/hash`, HASH, LATENCY_CALLS, keyFor, 1),
        );
        alone.floor.push(allServed(await drive(floor.url, HASH, LATENCY_CALLS, floor.keys, 1)));
      }
    } finally {
      floor.stop();
    }
    const directAlone = pooled(alone.direct);
    const throughAlone = pooled(alone.through);
    const floorAlone = pooled(alone.floor);
    const qrDirect =
      QR_CALLS > 0 ? await drive(`${workers.url}/tools/qr-code`, QR, QR_CALLS, () => ({})) : null;
    const qrThrough =
      QR_CALLS > 0 ? await drive(`${gateway.url}/v1/tools/qr-code`, QR, QR_CALLS, keyFor) : null;

    // Keyed calls as the client libraries send them: each with its own Idempotency-Key.
    const idempotentCpuBefore = cpuMicros(gateway.child.pid!);
    allServed(await drive(`${gateway.url}/v1/tools/hash`, HASH, CALLS, idempotentFor(keyFor)));
    const idempotentCpu = (cpuMicros(gateway.child.pid!) - idempotentCpuBefore) / CALLS;
    const idempotentAlone = await drive(
      `${gateway.url}/v1/tools/hash`,
      HASH,
      LATENCY_CALLS,
      idempotentFor(keyFor),
      1,
    );

    // Round trips: every command the gateway sends for a sample of calls, as Redis sees them,
    // less what it sends anyway in a quiet window of the same length (the webhook relay's polling).
    const roundTrips = async (headersFor: (i: number) => Record<string, string>) => {
      let commands: string[] = [];
      // A MULTI block is one round trip: counted once, as "multi".
      let inMulti = false;
      const watch = await watchRedisCommands((args, source) => {
        const command = args[0]!.toLowerCase();
        if (source === "lua") return;
        if (command === "multi") {
          inMulti = true;
          commands.push(command);
        } else if (command === "exec") inMulti = false;
        else if (!inMulti && args.some((a) => a.startsWith(prefix))) commands.push(command);
      });
      const sample = 200;
      await new Promise((r) => setTimeout(r, 100));
      const sampleStarted = performance.now();
      await drive(`${gateway.url}/v1/tools/hash`, HASH, sample, headersFor);
      const sampleMs = performance.now() - sampleStarted;
      await new Promise((r) => setTimeout(r, 200));
      const during = commands;
      commands = [];
      await new Promise((r) => setTimeout(r, sampleMs + 200));
      const background = commands;
      watch.stop();
      return {
        perCall: (during.length - background.length) / sample,
        kinds: [...new Set(during.filter((c) => !background.includes(c)))].join(", "),
        background,
      };
    };
    const { perCall, kinds, background } = await roundTrips(keyFor);
    const idempotent = await roundTrips(idempotentFor(keyFor));

    const row = (name: string, r: Run) =>
      `${name.padEnd(18)} ${r.rps.toFixed(0).padStart(8)} ${percentile(r.latencies, 50).toFixed(2).padStart(9)} ${percentile(r.latencies, 99).toFixed(2).padStart(9)} ${String(r.errors).padStart(7)}`;
    const header = `${"".padEnd(18)} ${"req/s".padStart(8)} ${"p50 ms".padStart(9)} ${"p99 ms".padStart(9)} ${"errors".padStart(7)}`;
    const signed = (ms: number) => `${ms >= 0 ? "+" : ""}${ms.toFixed(2)} ms`;
    const added = (a: Run, b: Run) =>
      `p50 ${signed(percentile(a.latencies, 50) - percentile(b.latencies, 50))}, p99 ${signed(percentile(a.latencies, 99) - percentile(b.latencies, 99))}`;
    console.log(
      `\nToolgate bench — tool "hash" (the cheapest tool: the gateway's own cost shows), Redis store, loopback, ${accounts.length} accounts`,
    );
    /** One comparison: the baseline and the gateway side by side (and the minimal proxy), then what the gateway costs. */
    const compare = (title: string, baseline: Run, gateway: Run, cost: string, least?: Run) =>
      console.log(
        `\n${title}\n${header}\n${row("worker direct", baseline)}\n${row("through gateway", gateway)}${least ? `\n${row("minimal proxy", least)}` : ""}\n${cost}`,
      );
    const ratio = (baseline: Run, gateway: Run) =>
      `throughput ratio (gateway / direct): ${(gateway.rps / baseline.rps).toFixed(2)}; latency under this load: ${added(gateway, baseline)}`;
    compare(
      `Throughput: ${CALLS} calls, ${CONCURRENCY} at a time`,
      direct,
      through,
      `${ratio(direct, through)}\nminimal proxy / direct: ${(floor.through.rps / direct.rps).toFixed(2)}`,
      floor.through,
    );
    compare(
      `Latency: ${LATENCY_ROUNDS} × ${LATENCY_CALLS} calls, one at a time`,
      directAlone,
      throughAlone,
      `latency the gateway adds: ${added(throughAlone, directAlone)} (goals: p50 ≤ 0.4 ms, p99 ≤ 1.5 ms); the minimal proxy adds ${added(floorAlone, directAlone)}\n` +
        `each round (${LATENCY_ROUNDS}, the three in turn), the gateway adds ${alone.through.map((r, i) => added(r, alone.direct[i]!)).join(" / ")}; the minimal proxy ${alone.floor.map((r, i) => added(r, alone.direct[i]!)).join(" / ")}\n` +
        ownTime(throughAlone),
      floorAlone,
    );
    if (qrDirect && qrThrough)
      compare(
        `A tool with work of its own: qr-code (256 px PNG), ${QR_CALLS} calls, ${CONCURRENCY} at a time`,
        qrDirect,
        qrThrough,
        ratio(qrDirect, qrThrough),
      );
    console.log(
      `Redis round trips per successful keyed call: ${perCall.toFixed(2)} (${kinds || "none"}); background polling in the same time: ${background.length} (${[...new Set(background)].join(", ") || "none"})`,
    );
    console.log(
      `With an Idempotency-Key on each call (as the client libraries send): ${idempotent.perCall.toFixed(2)} Redis round trips per call (${idempotent.kinds || "none"}); one at a time, the gateway adds ${added(idempotentAlone, directAlone)}; gateway CPU ${idempotentCpu.toFixed(0)} µs per call over ${CALLS} such calls ${CONCURRENCY} at a time`,
    );
    console.log(
      `\nCPU per keyed hash call over the ${CALLS} throughput calls: gateway ${cpu.gateway.toFixed(0)} µs, worker ${cpu.worker.toFixed(0)} µs, ratio ${(cpu.gateway / cpu.worker).toFixed(2)} (goals: ≤ 150 µs, ≤ 0.60); the minimal proxy ${floor.cpu.toFixed(0)} µs over the same number of calls (gateway / minimal proxy ${(cpu.gateway / floor.cpu).toFixed(2)}×)`,
    );

    // Scale across cores: the same throughput run on WEB_CONCURRENCY=2 (a primary and two gateway processes).
    const pair = await spawnGateway(
      prefix,
      { WORKERS_URL: workers.url, LOG_LEVEL: "info", WEB_CONCURRENCY: "2" },
      [],
      entry,
    ).catch(() => null);
    if (pair) {
      pair.child.stdout!.resume();
      await drive(`${pair.url}/v1/tools/hash`, HASH, WARMUP, keyFor);
      const two = await drive(`${pair.url}/v1/tools/hash`, HASH, CALLS, keyFor);
      await pair.stop();
      console.log(
        `Throughput, ${CALLS} hash calls ${CONCURRENCY} at a time: 1 process ${through.rps.toFixed(0)} req/s, 2 processes (WEB_CONCURRENCY=2) ${two.rps.toFixed(0)} req/s (${(two.rps / through.rps).toFixed(2)}×), errors ${two.errors}`,
      );
    } else console.log("Throughput with WEB_CONCURRENCY=2: this gateway does not support it");
    const cold = await coldStart(entry, workers.url, prefix);
    console.log(
      cold === null
        ? "Cold start: run `npm run build` first (no dist/)"
        : `Cold start of the compiled build (${entry}, production settings, no dev chain): ${cold.ms.toFixed(0)} ms to /readyz 200, ${cold.cpuMs.toFixed(0)} ms of CPU by then (goal < 1,000 ms)`,
    );
    await printRetainedBytes();
    if (baselineEntry) await compareWithBaseline(baselineEntry, entry, prefix, workers, keyFor);
    if ([direct, through, directAlone, throughAlone, qrDirect, qrThrough].some((r) => r?.errors))
      process.exitCode = 1;
  } finally {
    await gateway.stop();
    await workers.stop();
    await dropPrefix(prefix);
  }
}

/**
 * The same hash calls through the minimal Node proxy (bench/floor-gateway.ts, kind "node"): CALLS
 * at CONCURRENCY with its CPU per call. The proxy is left running (at `url`, its calls' headers
 * `keys`) for the latency rounds, until `stop`.
 */
async function measureFloor(workersUrl: string): Promise<{
  through: Run;
  cpu: number;
  url: string;
  keys: (i: number) => Record<string, string>;
  stop: () => void;
}> {
  const floor = await startFloor("node", Number(new URL(workersUrl).port), BENCH_NODE_ARGS);
  const stop = () => void floor.child.kill("SIGTERM");
  try {
    const url = `http://127.0.0.1:${floor.port}/v1/tools/hash`;
    // Its EVALSHA counts calls under a few keys of its own (bench-floor:k0…).
    const keys = (i: number) => ({ "x-api-key": `k${i % 25}` });
    await drive(url, HASH, WARMUP, keys);
    const before = cpuMicros(floor.child.pid!);
    const through = allServed(await drive(url, HASH, CALLS, keys));
    const cpu = (cpuMicros(floor.child.pid!) - before) / CALLS;
    return { through, cpu, url, keys, stop };
  } catch (err) {
    stop();
    throw err;
  }
}

/** Runs taken as one: their calls' latencies together, their rates averaged, their errors summed. */
function pooled(runs: Run[]): Run {
  return {
    rps: runs.reduce((sum, r) => sum + r.rps, 0) / runs.length,
    latencies: runs.flatMap((r) => r.latencies).sort((a, b) => a - b),
    errors: runs.reduce((sum, r) => sum + r.errors, 0),
    gatewayMs: runs.flatMap((r) => r.gatewayMs).sort((a, b) => a - b),
  };
}

/**
 * The gateway's own time per call, from its Server-Timing (request in → answer's headers, less the
 * tool's; its Redis round trip included): what it adds beyond that is the extra hop (client →
 * gateway → worker and back), each a wait for another process to run.
 */
function ownTime(run: Run): string {
  if (run.gatewayMs.length === 0) return "the gateway's own time: no Server-Timing in its answers";
  return `the gateway's own time per call (its Server-Timing, request in → answer out less the tool): p50 ${percentile(run.gatewayMs, 50).toFixed(2)} ms, p99 ${percentile(run.gatewayMs, 99).toFixed(2)} ms; the rest of what it adds is the extra hop (client → gateway → worker and back)`;
}

/**
 * Redis bytes a keyed call leaves once the books are exported (test/helpers/redis-bytes.ts: a
 * private Redis, and a private PostgreSQL unless TEST_DATABASE_URL names a server).
 */
async function printRetainedBytes(): Promise<void> {
  const calls = Math.min(CALLS, 2000);
  let cluster: PostgresCluster | null = null;
  try {
    let server = process.env.TEST_DATABASE_URL;
    if (!server) {
      cluster = await startPostgresCluster();
      await cluster.booted;
      server = cluster.url;
    }
    const bytes = await measureRetainedBytes({ calls, databaseUrl: await freshDatabase(server) });
    console.log(
      `Redis bytes retained per keyed call, books exported (${bytes.calls} calls, Σ MEMORY USAGE of every key): ${bytes.perCall.toFixed(1)} (goal ≤ 64; by key ${JSON.stringify(bytes.byKind)}; INFO used_memory less client buffers: ${bytes.usedMemoryPerCall.toFixed(1)})`,
    );
  } catch (err) {
    console.log(`Redis bytes retained per keyed call: not measured (${(err as Error).message})`);
  } finally {
    await cluster?.destroy();
  }
}

/**
 * The baseline (another build) and this gateway in the same run, on the same worker and Redis,
 * in alternating rounds, so both meet the same machine state: CPU per keyed call (both processes
 * alive, driven in turn), the latency each adds one call at a time, and each one's cold start.
 */
async function compareWithBaseline(
  baselineEntry: string,
  entry: string,
  prefix: string,
  workers: GatewayProcess,
  keyFor: (i: number) => Record<string, string>,
) {
  const rounds = ROUNDS;
  const calls = BASELINE_CALLS;
  const sides = [
    { name: "baseline", entry: baselineEntry },
    { name: "this build", entry },
  ].map((side) => ({
    ...side,
    cpu: [] as number[],
    cpuKeyed: [] as number[],
    p50: [] as number[],
    p99: [] as number[],
    coldMs: [] as number[],
    coldCpuMs: [] as number[],
  }));
  const gateways = await Promise.all(
    sides.map((side) =>
      spawnGateway(prefix, { WORKERS_URL: workers.url, LOG_LEVEL: "info" }, [], side.entry),
    ),
  );
  try {
    for (const gw of gateways) {
      gw.child.stdout!.resume();
      await drive(`${gw.url}/v1/tools/hash`, HASH, WARMUP, keyFor);
    }
    for (let round = 0; round < rounds; round++) {
      const direct = allServed(await drive(`${workers.url}/tools/hash`, HASH, 500, () => ({}), 1));
      for (const [i, side] of sides.entries()) {
        const pid = gateways[i]!.child.pid!;
        const url = `${gateways[i]!.url}/v1/tools/hash`;
        const before = cpuMicros(pid);
        allServed(await drive(url, HASH, calls, keyFor));
        side.cpu.push((cpuMicros(pid) - before) / calls);
        // The same calls as the client libraries send them, each with its own Idempotency-Key.
        const beforeKeyed = cpuMicros(pid);
        allServed(await drive(url, HASH, calls, idempotentFor(keyFor)));
        side.cpuKeyed.push((cpuMicros(pid) - beforeKeyed) / calls);
        const alone = allServed(await drive(url, HASH, 500, keyFor, 1));
        side.p50.push(percentile(alone.latencies, 50) - percentile(direct.latencies, 50));
        side.p99.push(percentile(alone.latencies, 99) - percentile(direct.latencies, 99));
        const cold = await coldStart(side.entry, workers.url, prefix);
        if (cold) {
          side.coldMs.push(cold.ms);
          side.coldCpuMs.push(cold.cpuMs);
        }
      }
    }
  } finally {
    await Promise.all(gateways.map((gw) => gw.stop()));
  }
  console.log(
    `\nAgainst the baseline (${baselineEntry}), ${rounds} alternating rounds; each round: ${calls} hash calls ${CONCURRENCY} at a time, 500 one at a time, one cold start`,
  );
  for (const side of sides) {
    console.log(
      `${side.name.padEnd(11)} CPU per call ${list(side.cpu)} µs (median ${median(side.cpu).toFixed(0)}), with an Idempotency-Key ${list(side.cpuKeyed)} µs (median ${median(side.cpuKeyed).toFixed(0)}); added p50 ${list(side.p50, 2)} ms, p99 ${list(side.p99, 2)} ms; ` +
        (side.coldMs.length
          ? `cold start ${list(side.coldMs)} ms wall, ${list(side.coldCpuMs)} ms CPU`
          : "cold start: not a compiled build"),
    );
  }
  const [base, mine] = sides;
  console.log(
    `this build / baseline: CPU per call ${(median(mine!.cpu) / median(base!.cpu)).toFixed(2)}×, with an Idempotency-Key ${(median(mine!.cpuKeyed) / median(base!.cpuKeyed)).toFixed(2)}×` +
      (base!.coldCpuMs.length && mine!.coldCpuMs.length
        ? `, cold-start CPU ${(median(mine!.coldCpuMs) / median(base!.coldCpuMs)).toFixed(2)}×`
        : ""),
  );
}

/** A run with failed calls would compare cheap refusals with served calls: stop instead. */
function allServed(run: Run): Run {
  if (run.errors > 0)
    throw new Error(`${run.errors} calls were not answered 200: the comparison would be wrong`);
  return run;
}

/** Keyed calls as the client libraries send them: each with an Idempotency-Key of its own. */
const idempotentFor =
  (keyFor: (i: number) => Record<string, string>) =>
  (i: number): Record<string, string> => ({ ...keyFor(i), "idempotency-key": randomUUID() });

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
