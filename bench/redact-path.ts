/**
 * What the request log pays per request to cut the configured secrets out of its path
 * (src/http/logged-path.ts `pathForLog`: `redactSecrets(loggedPath(url))`, then a second pass only
 * when the path holds a percent escape): the one matcher built at
 * start-up (src/lib/redact.ts) from a production-like configuration's secrets (config.ts
 * `secretValues`: admin key, two secret keys, a relayer key, passwords in REDIS_URL,
 * DATABASE_URL, SMTP_URL and WORKERS_URL, an RPC URL's API key), run over ordinary request paths
 * that hold no secret (the common case). Prints ns per path, the median of several rounds.
 * `npm run bench:redact-path`.
 */
import { loadConfig, secretValues } from "../src/config.js";
import { loggedPath } from "../src/http/logged-path.js";
import { secretRedactor } from "../src/lib/redact.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const PER_ROUND = 1_000_000;

const config = loadConfig({
  NODE_ENV: "production",
  PUBLIC_BASE_URL: "https://api.example.com",
  ADMIN_API_KEY: "Adm1n-Pr0d!key/with+chars=and.more_xyz",
  SECRET_KEY: `${"k".repeat(40)},${"j".repeat(40)}`,
  REDIS_URL: "redis://:redis-passw0rd-xyz@redis.internal:6379",
  DATABASE_URL: "postgres://books:db%2Bpass@db.internal:5432/toolgate",
  SMTP_URL: "smtp://mailer:pw1@smtp.internal:587",
  MAIL_FROM: "Toolgate <no-reply@api.example.com>",
  WORKERS_URL: "http://worker:wrk-passw0rd-123@workers.internal:8080/",
  X402_NETWORKS: "base-sepolia",
  BASE_SEPOLIA_RPC_URL: "https://base-sepolia.g.alchemy.com/v2/rpc-provider-key-abc123",
  X402_PAY_TO: `0x${"11".repeat(20)}`,
  X402_RELAYER_PRIVATE_KEY: `0x${"ab".repeat(32)}`,
});
const redact = secretRedactor(secretValues(config));
const urls = [
  "/v1/tools/text-stats",
  "/v1/tools/json-format",
  "/api/v1/account",
  "/api/v1/usage?limit=50&cursor=abc",
  "/v1/tools",
  "/healthz",
  "/dashboard/keys",
  "/api/v1/keys/key_01hzzzzzzzzzzzzzzzzzzzzzzz",
];

const paths = urls.map(loggedPath);

/** ns per path of `fn` over the paths: the fastest and the median round (the machine is shared). */
function time(fn: (path: string) => string): { min: number; median: number } {
  let sink = 0;
  const rounds: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < PER_ROUND; i++) sink += fn(paths[i & 7]!).length;
    rounds.push(Number(process.hrtime.bigint() - started) / PER_ROUND);
  }
  if (sink === 0) throw new Error("nothing ran");
  rounds.sort((a, b) => a - b);
  return { min: rounds[0]!, median: rounds[rounds.length >> 1]! };
}

const loop = time((path) => path); // the loop alone, subtracted
const scan = time(redact);
const round1 = (ns: number) => Math.round(ns * 10) / 10;
console.log(
  JSON.stringify({
    redaction_ns_per_path_min: round1(scan.min - loop.min),
    redaction_ns_per_path_median: round1(scan.median - loop.median),
    loop_ns: round1(loop.min),
  }),
);
