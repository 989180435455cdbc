/**
 * What a write of several commands costs the gateway's Redis client: the same two writes (HSET of
 * a stored answer, then its EXPIRE) sent as a MULTI block and as one Lua script, one at a time and
 * 8 at a time, in alternating rounds. Printed: the client's CPU per write (process.cpuUsage, so
 * the socket syscalls count too), writes per second, and the ratio script / MULTI.
 *
 * It is the measurement behind the scripts that replaced the MULTI blocks on the call path
 * (`idempotency-complete.lua`, `payment-save.lua`). Loopback only; bounded by BENCH_CALLS.
 *
 *   npm run bench:redis-writes    (Redis at 127.0.0.1:6379; BENCH_CALLS=20000 BENCH_ROUNDS=3)
 */
import { Redis } from "ioredis";
import { dropPrefix, REDIS_URL, uniquePrefix } from "../test/helpers/redis.js";
import { median } from "./stats.js";

const CALLS = Number(process.env.BENCH_CALLS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const KEYS = 1000;
const ANSWER = JSON.stringify({ status: 200, body: { result: "x".repeat(200) } });
const SCRIPT = `redis.call('HSET', KEYS[1], 'state', 'completed', 'response', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1`;

type Write = (key: string) => Promise<unknown>;

async function main() {
  const prefix = uniquePrefix("bench-writes");
  const redis = new Redis(REDIS_URL, { keyPrefix: prefix, enableAutoPipelining: false });
  redis.defineCommand("complete", { numberOfKeys: 1, lua: SCRIPT });
  const ways: Record<"multi" | "script", Write> = {
    multi: (key) =>
      redis.multi().hset(key, "state", "completed", "response", ANSWER).expire(key, 86400).exec(),
    script: (key) =>
      (redis as unknown as { complete: (...a: unknown[]) => Promise<unknown> }).complete(
        key,
        ANSWER,
        86400,
      ),
  };

  /** CALLS writes, `concurrency` in flight: client CPU µs per write and writes per second. */
  const measure = async (write: Write, concurrency: number) => {
    let next = 0;
    const cpu = process.cpuUsage();
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < CALLS) await write(`idem:${next++ % KEYS}`);
      }),
    );
    const used = process.cpuUsage(cpu);
    return {
      cpuMicros: (used.user + used.system) / CALLS,
      perSecond: (CALLS / (performance.now() - started)) * 1000,
    };
  };

  try {
    // Warm both (JIT, script cache).
    for (const write of Object.values(ways)) await measure(write, 8);
    console.log(
      `\nRedis writes of a stored answer (HSET + EXPIRE), ${CALLS} per run, ${ROUNDS} alternating rounds`,
    );
    for (const concurrency of [1, 8]) {
      const cpu = { multi: [] as number[], script: [] as number[] };
      const rate = { multi: [] as number[], script: [] as number[] };
      for (let round = 0; round < ROUNDS; round++)
        for (const name of ["multi", "script"] as const) {
          const run = await measure(ways[name], concurrency);
          cpu[name].push(run.cpuMicros);
          rate[name].push(run.perSecond);
        }
      const list = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(" / ");
      console.log(`${concurrency} at a time`);
      for (const name of ["multi", "script"] as const)
        console.log(
          `  ${name.padEnd(7)} client CPU per write ${list(cpu[name])} µs (median ${median(cpu[name]).toFixed(0)}); ${list(rate[name])} writes/s`,
        );
      console.log(
        `  script / MULTI: client CPU ${(median(cpu.script) / median(cpu.multi)).toFixed(2)}×, writes/s ${(median(rate.script) / median(rate.multi)).toFixed(2)}×`,
      );
    }
  } finally {
    await redis.quit();
    await dropPrefix(prefix);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
