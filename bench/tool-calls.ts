/**
 * Keyed tool calls through the gateway (Redis store) against the same calls sent straight to
 * the worker, in one run: throughput of both and their ratio, the latency the gateway adds
 * (p50/p99), and Redis round trips per call (counted with MONITOR, script-internal commands
 * excluded). Loopback only; bounded by BENCH_CALLS.
 *
 *   npm run bench            (Redis at 127.0.0.1:6379; BENCH_CALLS=20000 BENCH_CONCURRENCY=32)
 *   BENCH_PROFILE=/tmp/prof  also writes a CPU profile of the gateway (.cpuprofile) there
 */
import { Agent, request } from "node:http";
import { Redis } from "ioredis";
import { fundedAccount, spawnGateway, spawnService } from "../test/helpers/gateway.js";
import { REDIS_URL, dropPrefix, uniquePrefix } from "../test/helpers/redis.js";
import { percentile } from "./stats.js";

const CALLS = Number(process.env.BENCH_CALLS ?? 20_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
/** Unloaded latency is measured one call at a time, on fewer calls. */
const LATENCY_CALLS = Math.max(500, Math.floor(CALLS / 10));
const QR_CALLS = Math.max(1000, Math.floor(CALLS / 4));
const HASH = JSON.stringify({ text: "benchmark payload", algorithm: "sha256" });
/** A tool that does some work of its own (a 256-pixel PNG), as real tools do: who keeps up with it? */
const QR = JSON.stringify({ text: "https://toolgate.example/v1/tools/qr-code?bench=1", format: "png", size: 256 });

interface Run {
  rps: number;
  latencies: number[];
  errors: number;
}

/** Sends `count` POSTs over `CONCURRENCY` keep-alive connections; `headers(i)` varies per call. */
async function drive(url: string, body: string, count: number, headers: (i: number) => Record<string, string>, concurrency = CONCURRENCY): Promise<Run> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const target = new URL(url);
  const latencies: number[] = [];
  let next = 0;
  let errors = 0;
  const one = (i: number) =>
    new Promise<void>((resolve) => {
      const started = process.hrtime.bigint();
      const req = request(
        { agent, host: target.hostname, port: target.port, path: target.pathname, method: "POST", headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers(i) } },
        (res) => {
          res.resume();
          res.on("end", () => {
            if (res.statusCode !== 200) errors++;
            latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
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
  return { rps: count / seconds, latencies: latencies.sort((a, b) => a - b), errors };
}


async function main() {
  const prefix = uniquePrefix("bench");
  const workers = await spawnService("src/workers/main.ts", "workers listening", { PORT: "0", LOG_LEVEL: "info" });
  workers.child.stdout!.resume();
  const profile = process.env.BENCH_PROFILE ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  const gateway = await spawnGateway(prefix, { WORKERS_URL: workers.url, LOG_LEVEL: "info" }, profile).catch(async (err: unknown) => {
    await workers.stop();
    throw err;
  });
  gateway.child.stdout!.resume(); // request logs stay on, as in production; drained, not printed
  try {
    // Business accounts allow 1,000 calls a minute each: spread the calls over enough of them.
    const accounts = await Promise.all(Array.from({ length: Math.ceil((CALLS + LATENCY_CALLS + QR_CALLS + 1700) / 900) }, () => fundedAccount(gateway.url, CALLS + 100, "business")));
    const keyFor = (i: number) => ({ "x-api-key": accounts[i % accounts.length]!.key });

    // Warm both paths (JIT, connections, script cache).
    await drive(`${workers.url}/tools/hash`, HASH, 500, () => ({}));
    await drive(`${gateway.url}/v1/tools/hash`, HASH, 500, keyFor);
    await drive(`${workers.url}/tools/qr-code`, QR, 100, () => ({}));
    await drive(`${gateway.url}/v1/tools/qr-code`, QR, 100, keyFor);

    const direct = await drive(`${workers.url}/tools/hash`, HASH, CALLS, () => ({}));
    const through = await drive(`${gateway.url}/v1/tools/hash`, HASH, CALLS, keyFor);
    const directAlone = await drive(`${workers.url}/tools/hash`, HASH, LATENCY_CALLS, () => ({}), 1);
    const throughAlone = await drive(`${gateway.url}/v1/tools/hash`, HASH, LATENCY_CALLS, keyFor, 1);
    const qrDirect = await drive(`${workers.url}/tools/qr-code`, QR, QR_CALLS, () => ({}));
    const qrThrough = await drive(`${gateway.url}/v1/tools/qr-code`, QR, QR_CALLS, keyFor);

    // Round trips: every command the gateway sends for a sample of calls, as Redis sees them,
    // less what it sends anyway in a quiet window of the same length (the webhook relay's polling).
    const monitor = new Redis(REDIS_URL);
    let commands: string[] = [];
    const feed = await monitor.monitor();
    feed.on("monitor", (_time: string, args: string[], source: string) => {
      if (source !== "lua" && args.some((a) => a.startsWith(prefix))) commands.push(String(args[0]).toLowerCase());
    });
    const sample = 200;
    await new Promise((r) => setTimeout(r, 100));
    const sampleStarted = performance.now();
    await drive(`${gateway.url}/v1/tools/hash`, HASH, sample, keyFor);
    const sampleMs = performance.now() - sampleStarted;
    await new Promise((r) => setTimeout(r, 200));
    const during = commands;
    commands = [];
    await new Promise((r) => setTimeout(r, sampleMs + 200));
    const background = commands;
    feed.disconnect();
    monitor.disconnect();
    const perCall = (during.length - background.length) / sample;
    const kinds = [...new Set(during.filter((c) => !background.includes(c)))].join(", ");

    const row = (name: string, r: Run) =>
      `${name.padEnd(18)} ${r.rps.toFixed(0).padStart(8)} ${percentile(r.latencies, 50).toFixed(2).padStart(9)} ${percentile(r.latencies, 99).toFixed(2).padStart(9)} ${String(r.errors).padStart(7)}`;
    const header = `${"".padEnd(18)} ${"req/s".padStart(8)} ${"p50 ms".padStart(9)} ${"p99 ms".padStart(9)} ${"errors".padStart(7)}`;
    const signed = (ms: number) => `${ms >= 0 ? "+" : ""}${ms.toFixed(2)} ms`;
    const added = (a: Run, b: Run) => `p50 ${signed(percentile(a.latencies, 50) - percentile(b.latencies, 50))}, p99 ${signed(percentile(a.latencies, 99) - percentile(b.latencies, 99))}`;
    console.log(`\nToolgate bench — tool "hash" (the cheapest tool: the gateway's own cost shows), Redis store, loopback, ${accounts.length} accounts`);
    /** One comparison: the baseline and the gateway side by side, then what the gateway costs. */
    const compare = (title: string, baseline: Run, gateway: Run, cost: string) =>
      console.log(`\n${title}\n${header}\n${row("worker direct", baseline)}\n${row("through gateway", gateway)}\n${cost}`);
    const ratio = (baseline: Run, gateway: Run) => `throughput ratio (gateway / direct): ${(gateway.rps / baseline.rps).toFixed(2)}; latency under this load: ${added(gateway, baseline)}`;
    compare(`Throughput: ${CALLS} calls, ${CONCURRENCY} at a time`, direct, through, ratio(direct, through));
    compare(`Latency: ${LATENCY_CALLS} calls, one at a time`, directAlone, throughAlone, `latency the gateway adds: ${added(throughAlone, directAlone)}`);
    compare(`A tool with work of its own: qr-code (256 px PNG), ${QR_CALLS} calls, ${CONCURRENCY} at a time`, qrDirect, qrThrough, ratio(qrDirect, qrThrough));
    console.log(`Redis round trips per successful keyed call: ${perCall.toFixed(2)} (${kinds || "none"}); background polling in the same time: ${background.length} (${[...new Set(background)].join(", ") || "none"})`);
    if ([direct, through, directAlone, throughAlone, qrDirect, qrThrough].some((r) => r.errors)) process.exitCode = 1;
  } finally {
    await gateway.stop();
    await workers.stop();
    await dropPrefix(prefix);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
