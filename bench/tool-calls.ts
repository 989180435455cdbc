/**
 * Keyed tool calls through the gateway (Redis store) against the same calls sent straight to
 * the worker, in one run: throughput of both and their ratio, the latency the gateway adds
 * (p50/p99), and Redis round trips per call (counted with MONITOR, script-internal commands
 * excluded). Loopback only; bounded by BENCH_CALLS.
 *
 *   npm run bench            (Redis at 127.0.0.1:6379; BENCH_CALLS=20000 BENCH_CONCURRENCY=32)
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
const BODY = JSON.stringify({ text: "benchmark payload", algorithm: "sha256" });

interface Run {
  rps: number;
  latencies: number[];
  errors: number;
}

/** Sends `count` POSTs over `CONCURRENCY` keep-alive connections; `headers(i)` varies per call. */
async function drive(url: string, count: number, headers: (i: number) => Record<string, string>, concurrency = CONCURRENCY): Promise<Run> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const target = new URL(url);
  const latencies: number[] = [];
  let next = 0;
  let errors = 0;
  const one = (i: number) =>
    new Promise<void>((resolve) => {
      const started = process.hrtime.bigint();
      const req = request(
        { agent, host: target.hostname, port: target.port, path: target.pathname, method: "POST", headers: { "content-type": "application/json", "content-length": Buffer.byteLength(BODY), ...headers(i) } },
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
      req.end(BODY);
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
  const gateway = await spawnGateway(prefix, { WORKERS_URL: workers.url, LOG_LEVEL: "info" });
  gateway.child.stdout!.resume(); // request logs stay on, as in production; drained, not printed
  try {
    // Business accounts allow 1,000 calls a minute each: spread the calls over enough of them.
    const accounts = await Promise.all(Array.from({ length: Math.ceil((CALLS + LATENCY_CALLS + 1500) / 900) }, () => fundedAccount(gateway.url, CALLS + 100, "business")));
    const keyFor = (i: number) => ({ "x-api-key": accounts[i % accounts.length]!.key });

    // Warm both paths (JIT, connections, script cache).
    await drive(`${workers.url}/tools/hash`, 500, () => ({}));
    await drive(`${gateway.url}/v1/tools/hash`, 500, keyFor);

    const direct = await drive(`${workers.url}/tools/hash`, CALLS, () => ({}));
    const through = await drive(`${gateway.url}/v1/tools/hash`, CALLS, keyFor);
    const directAlone = await drive(`${workers.url}/tools/hash`, LATENCY_CALLS, () => ({}), 1);
    const throughAlone = await drive(`${gateway.url}/v1/tools/hash`, LATENCY_CALLS, keyFor, 1);

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
    await drive(`${gateway.url}/v1/tools/hash`, sample, keyFor);
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
    const added = (a: Run, b: Run) => `p50 +${(percentile(a.latencies, 50) - percentile(b.latencies, 50)).toFixed(2)} ms, p99 +${(percentile(a.latencies, 99) - percentile(b.latencies, 99)).toFixed(2)} ms`;
    console.log(`\nToolgate bench — tool "hash" (the cheapest tool: the gateway's own cost shows), Redis store, loopback, ${accounts.length} accounts`);
    console.log(`\nThroughput: ${CALLS} calls, ${CONCURRENCY} at a time\n${header}`);
    console.log(row("worker direct", direct));
    console.log(row("through gateway", through));
    console.log(`throughput ratio (gateway / direct): ${(through.rps / direct.rps).toFixed(2)}; latency under this load: ${added(through, direct)}`);
    console.log(`\nLatency: ${LATENCY_CALLS} calls, one at a time\n${header}`);
    console.log(row("worker direct", directAlone));
    console.log(row("through gateway", throughAlone));
    console.log(`latency the gateway adds: ${added(throughAlone, directAlone)}`);
    console.log(`Redis round trips per successful keyed call: ${perCall.toFixed(2)} (${kinds || "none"}); background polling in the same time: ${background.length} (${[...new Set(background)].join(", ") || "none"})`);
    if ([direct, through, directAlone, throughAlone].some((r) => r.errors)) process.exitCode = 1;
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
