import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayProcess, spawnGateway } from "../helpers/gateway.js";
import { killMarked, startToolgate, type Started } from "../helpers/processes.js";
import { REDIS_URL, dropPrefix, uniquePrefix } from "../helpers/redis.js";

/**
 * A real gateway process, configured with secrets of no fixed shape, whose log (its stdout) and
 * public answers must never hold one: the admin key pasted into a URL, and the passwords and API
 * keys inside URL settings, which libraries (viem, fetch) name in their errors.
 */
const ADMIN_KEY = 'Adm1n-Pr0d!key/with+chars=and.more_xyz~"q"'; // no tg_ prefix: production's is any string of 24+
const RPC_KEY = "rpc-provider-key-abc123";
const WORKERS_PASSWORD = "wrk-passw0rd-123";
const DB_PASSWORD = "db-passw0rd-xyz";
const SMTP_PASSWORD = "smtp-passw0rd-xyz";
const REDIS_PASSWORD = "redis-passw0rd-xyz";
const RELAYER_KEY = `0x${"ab".repeat(32)}`;
/** `text` with the hex digits of its percent-escapes in lower case (`%2F` → `%2f`), as some clients write them. */
const lowerEscapes = (text: string) => text.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase());
/** `text` with every character percent-escaped (ASCII only). */
const escapedEach = (text: string) =>
  [...text].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).join("");
const SECRETS = [
  ADMIN_KEY,
  encodeURIComponent(ADMIN_KEY),
  lowerEscapes(encodeURIComponent(ADMIN_KEY)),
  new URL(`http://h/${ADMIN_KEY}`).pathname.slice(1), // as fetch writes it in a path
  RPC_KEY,
  WORKERS_PASSWORD,
  DB_PASSWORD,
  SMTP_PASSWORD,
  REDIS_PASSWORD,
  RELAYER_KEY.slice(2),
];
/** Every secret form, as it would appear inside a JSON log line too. */
const leakIn = (text: string) =>
  SECRETS.filter((s) => text.includes(s) || text.includes(JSON.stringify(s).slice(1, -1)));

let gw: GatewayProcess;
const prefix = uniquePrefix("secrets");
beforeAll(async () => {
  gw = await spawnGateway(prefix, {
    ADMIN_API_KEY: ADMIN_KEY,
    REDIS_URL: REDIS_URL.replace("redis://", `redis://:${REDIS_PASSWORD}@`), // the test Redis has no password: ioredis goes on
    // Nothing listens on port 9: each library fails, and says so with the URL it was given. (A
    // workers URL holds no password: one with userinfo is refused at start, below.)
    WORKERS_URL: "http://127.0.0.1:9",
    DATABASE_URL: `postgres://books:${DB_PASSWORD}@127.0.0.1:9/toolgate`,
    SMTP_URL: `smtp://mailer:${SMTP_PASSWORD}@127.0.0.1:9`,
    X402_NETWORKS: "base-sepolia",
    BASE_SEPOLIA_RPC_URL: `http://127.0.0.1:9/v2/${RPC_KEY}`,
    X402_PAY_TO: `0x${"11".repeat(20)}`,
    X402_RELAYER_PRIVATE_KEY: RELAYER_KEY,
    STATUS_CHECK_INTERVAL_MS: "1000",
  });
}, 90_000);
afterAll(async () => {
  await gw?.stop();
  await dropPrefix(prefix);
});

const logLines = () =>
  gw.output.flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch {
      return [];
    }
  });

/** Waits (a few seconds at most) for the process to have logged a line that `match`es. */
async function logged(match: (line: Record<string, unknown>) => boolean) {
  for (let waited = 0; waited < 15_000; waited += 100) {
    const found = logLines().filter(match);
    if (found.length > 0) return found;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("no such log line");
}

describe("secrets in the log and the public answers", () => {
  it("redacts the configured admin key wherever a request's path holds it, in every form a client sends it", async () => {
    const sent = [
      ["GET", `/v1/tools/${ADMIN_KEY}`, "/v1/tools/[redacted]"],
      ["GET", `/api/v1/${encodeURIComponent(ADMIN_KEY)}`, "/api/v1/[redacted]"],
      ["GET", `/x/${ADMIN_KEY}/y?key=${ADMIN_KEY}`, "/x/[redacted]/y"],
      // The hex digits of percent-escapes in either case: `%2f`, `%2B`, mixed.
      ["GET", `/api/v1/${lowerEscapes(encodeURIComponent(ADMIN_KEY))}`, "/api/v1/[redacted]"],
      [
        "GET",
        `/api/v1/${encodeURIComponent(ADMIN_KEY).replace("%2F", "%2f")}`,
        "/api/v1/[redacted]",
      ],
      // The secret itself is case-sensitive text: the key in other letters is no secret.
      [
        "GET",
        `/api/v1/${encodeURIComponent(ADMIN_KEY.toUpperCase())}`,
        `/api/v1/${encodeURIComponent(ADMIN_KEY.toUpperCase())}`,
      ],
      // Every character escaped, as no encoder writes it but a client may: found in the decoded path.
      ["GET", `/zz/${escapedEach(ADMIN_KEY)}`, "/zz/[redacted]"],
      // The keyed lane (a plain JSON tool call) writes its own request line.
      ["POST", `/v1/tools/${encodeURIComponent(ADMIN_KEY)}`, "/v1/tools/[redacted]"],
      ["POST", `/v1/tools/${lowerEscapes(encodeURIComponent(ADMIN_KEY))}`, "/v1/tools/[redacted]"],
    ] as const;
    for (const [method, path, expected] of sent) {
      const res = await fetch(`${gw.url}${path}`, {
        method,
        headers: { "content-type": "application/json", "x-api-key": "tg_live_nobody_x" },
        ...(method === "POST" ? { body: "{}" } : {}),
      });
      const id = res.headers.get("x-request-id");
      const [line] = await logged((l) => l.msg === "request" && l.request_id === id);
      expect([line!.method, line!.path]).toEqual([method, expected]);
    }
  });

  it("repeats an unknown path in its 404 (and a known one in its 405) bounded, and without a secret", async () => {
    const answer = async (method: string, path: string) => {
      const res = await fetch(`${gw.url}${path}`, { method });
      const body = (await res.json()) as { error: { code: string; message: string } };
      return [res.status, body.error.code, body.error.message];
    };
    const long = `/api/v1/${"a".repeat(7000)}`;
    expect(await answer("GET", long)).toEqual([
      404,
      "route_not_found",
      `No route for GET ${long.slice(0, 200)}….`,
    ]);
    expect(await answer("GET", `/nothing/${encodeURIComponent(ADMIN_KEY)}/here?q=1`)).toEqual([
      404,
      "route_not_found",
      "No route for GET /nothing/[redacted]/here.",
    ]);
    // A secret across the cut: redacted whole before the path is cut, so not even its head shows.
    expect(
      await answer("GET", `/nothing/${"b".repeat(185)}${encodeURIComponent(ADMIN_KEY)}`),
    ).toEqual([404, "route_not_found", `No route for GET /nothing/${"b".repeat(185)}[redac….`]);
    expect(await answer("PUT", `/api/v1/keys/${encodeURIComponent(ADMIN_KEY)}`)).toEqual([
      405,
      "method_not_allowed",
      "PUT is not allowed on /api/v1/keys/[redacted]; it serves PATCH, DELETE, OPTIONS.",
    ]);
  });

  it("cuts the RPC's API key out of viem's errors", async () => {
    const [chain] = await logged((l) => String(l.err).includes("HTTP request failed"));
    expect(String(chain!.err)).toContain("URL: http://127.0.0.1:9[redacted]");
  });

  it("keeps every secret out of the public status answer", async () => {
    let details: string[] = [];
    for (let waited = 0; waited < 15_000 && details.length === 0; waited += 200) {
      const status = (await (await fetch(`${gw.url}/status.json`)).json()) as {
        components: { id: string; detail: string | null }[];
      };
      details = status.components
        .filter((c) => c.id.startsWith("worker-pool-") && c.detail)
        .map((c) => c.detail!);
      if (details.length === 0) await new Promise((r) => setTimeout(r, 200));
    }
    expect(details.length).toBeGreaterThan(0);
    expect(leakIn(await (await fetch(`${gw.url}/status.json`)).text())).toEqual([]);
    expect(leakIn(await (await fetch(`${gw.url}/status`)).text())).toEqual([]);
  });

  it("wrote no secret in any line, in any form", () => {
    expect(gw.output.length).toBeGreaterThan(5);
    expect(gw.output.filter((line) => leakIn(line).length > 0)).toEqual([]);
  });
});

/**
 * Short URL passwords are redacted only where they sit in a URL (`:pw@`; alone they would cut
 * ordinary words): every library's error and log line that names such a URL, whichever way it
 * writes the password (as given, or percent-encoded as a URL parser does: `^` is `%5E`).
 */
describe("short passwords in URL settings", () => {
  const SHORT = { redis: "r^1", books: "d^1", smtp: "s^1" };
  /** Each password as given and percent-encoded, in either case: not one may be written anywhere. */
  const forms = Object.values(SHORT).flatMap((pw) => [
    pw,
    encodeURIComponent(pw),
    encodeURIComponent(pw).toLowerCase(),
  ]);
  const leaks = (text: string) => text.split("\n").filter((l) => forms.some((f) => l.includes(f)));
  const started: Started[] = [];
  const shortPrefix = uniquePrefix("secrets-short");
  afterAll(async () => {
    for (const g of started) {
      g.child.kill("SIGKILL");
      killMarked(g.marker);
    }
    await dropPrefix(shortPrefix);
  });

  it("never writes them while the gateway serves with Redis, the workers, the books database and SMTP failing them", async () => {
    const g = startToolgate({
      NODE_ENV: "test",
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      ADMIN_API_KEY: ADMIN_KEY,
      SECRET_KEY: "s".repeat(32),
      REDIS_KEY_PREFIX: shortPrefix,
      REDIS_URL: REDIS_URL.replace("redis://", `redis://:${SHORT.redis}@`), // no password on the test Redis: ioredis goes on
      // Nothing listens on port 9.
      WORKERS_URL: "http://127.0.0.1:9",
      DATABASE_URL: `postgres://books:${SHORT.books}@127.0.0.1:9/toolgate`,
      SMTP_URL: `smtp://mailer:${SHORT.smtp}@127.0.0.1:9`,
      STATUS_CHECK_INTERVAL_MS: "1000",
    });
    started.push(g);
    const url = `http://127.0.0.1:${(await g.waitFor(/"port":(\d+)[^\n]*"msg":"listening"/))[1]}`;
    // A sign-up sends its verification e-mail: SMTP fails it.
    const signup = await fetch(`${url}/api/v1/signup`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: `short-${shortPrefix.replace(/\W/g, "")}@example.com` }),
    });
    expect(signup.status).toBe(201);
    await g.waitFor(/could not send the verification e-mail/, 15_000);
    await g.waitFor(/the books database cannot be opened yet/, 15_000);
    await g.waitFor(/could not read the workers' tool availability/, 15_000);
    const status = await (await fetch(`${url}/status.json`)).text();
    g.child.kill("SIGTERM");
    await g.exited;
    expect(leaks(status)).toEqual([]);
    expect(leaks(g.stdout())).toEqual([]);
    expect(leaks(g.stderr())).toEqual([]);
  }, 90_000);

  it("never writes them when the gateway cannot start (a development gateway whose Redis is down)", async () => {
    const g = startToolgate({
      NODE_ENV: "development",
      DEV_CHAIN: "0",
      PORT: "0",
      HOST: "127.0.0.1",
      REDIS_URL: `redis://:${SHORT.redis}@127.0.0.1:9`,
    });
    started.push(g);
    expect((await g.exited).code).toBe(1);
    expect(g.stderr()).toMatch(/^Toolgate could not start: the store at REDIS_URL cannot be used/);
    expect(leaks(g.stdout())).toEqual([]);
    expect(leaks(g.stderr())).toEqual([]);
  }, 90_000);
});

describe("a configuration refused before any secret is known", () => {
  // The x402 settings are checked once the schema passed: apart from the schema's problems.
  const BAD: [string, Record<string, string>][] = [
    [
      "the settings the schema refuses",
      {
        ADMIN_API_KEY: "short-Admin-9", // fewer than 24 characters
        SECRET_KEY: "short-Secret-Key-7",
        X402_RELAYER_PRIVATE_KEY: "0xnot-a-Relayer-Key-3",
        X402_RELAYER_PRIVATE_KEYS: `0x${"ab".repeat(32)},0xnot-a-Relayer-Key-4`,
        WORKERS_URL: `http://wkr-user:${WORKERS_PASSWORD}@127.0.0.1:9/`, // a password: refused
        METRICS_TOKEN: "short-Metric-5",
      },
    ],
    ["an RPC URL not http(s)", { BASE_SEPOLIA_RPC_URL: `wss://rpc.example/v2/${RPC_KEY}` }],
    [
      "an RPC URL that does not parse, second of two",
      { BASE_SEPOLIA_RPC_URL: `http://127.0.0.1:9/v2/${RPC_KEY},http://[::1/v2/${RPC_KEY}` },
    ],
  ];
  for (const [what, bad] of BAD)
    it(`names each setting without repeating its value: ${what}`, async () => {
      const g = startToolgate({
        NODE_ENV: "test",
        PORT: "0",
        HOST: "127.0.0.1",
        X402_NETWORKS: "base-sepolia",
        X402_PAY_TO: `0x${"11".repeat(20)}`,
        X402_RELAYER_PRIVATE_KEY: RELAYER_KEY,
        ...bad,
      });
      // Bounded: a gateway that started after all is killed here, not left running.
      const exited = await Promise.race([
        g.exited,
        new Promise<null>((r) => setTimeout(() => r(null), 30_000)),
      ]);
      killMarked(g.marker);
      expect(exited?.code, "exit code (null: it started)").toBe(78);
      for (const name of Object.keys(bad)) expect(g.stderr()).toContain(`  - ${name}`);
      const values = Object.values(bad).flatMap((value) => [
        value,
        ...value.split(/[,/:@]/).filter((part) => part.length >= 6),
      ]);
      const output = g.stdout() + g.stderr();
      expect(values.filter((value) => output.includes(value))).toEqual([]);
    }, 60_000);
});
