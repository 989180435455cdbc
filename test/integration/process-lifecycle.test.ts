import { once } from "node:events";
import { createServer as createTcpServer, type Server as TcpServer } from "node:net";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { startBundledWorkers } from "../../src/tools/bundled-workers.js";
import { loadWorkerConfig } from "../../src/workers/config.js";
import { startWorkers } from "../../src/workers/main.js";
import {
  killMarked,
  processesMarked,
  startToolgate,
  waitUntilNoneMarked,
  type Started,
} from "../helpers/processes.js";
import { spawnService } from "../helpers/gateway.js";
import { REDIS_URL, dropPrefix, uniquePrefix } from "../helpers/redis.js";

/**
 * A gateway's life as a process: it starts (or refuses to) cleanly, it never leaves a child
 * behind however it ends, and neither its log sink nor its log level decides whether it serves
 * or stops. Real gateway processes, real bundled workers, a real anvil.
 */
const started: Started[] = [];
const run = (env: Record<string, string>) => {
  const g = startToolgate(env);
  started.push(g);
  return g;
};
afterEach(() => {
  for (const g of started.splice(0)) {
    g.child.kill("SIGKILL");
    killMarked(g.marker);
  }
});

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createTcpServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

const within = <T>(promise: Promise<T>, ms: number, what: string) =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms),
    ),
  ]);

describe("a gateway and its children", () => {
  it("takes its bundled workers and its local chain along when it is SIGKILLed", async () => {
    const g = run({ NODE_ENV: "development", PORT: "0", HOST: "127.0.0.1" });
    await g.waitFor(/CHAIN_RPC_URL=\S+/);
    await g.waitFor(/"msg":"listening"/);
    const children = processesMarked(g.marker).filter((p) => p.pid !== g.child.pid);
    expect(children.some((p) => p.command.includes("anvil"))).toBe(true);
    expect(children.some((p) => p.command.includes("workers/main"))).toBe(true);

    g.child.kill("SIGKILL");
    expect(await waitUntilNoneMarked(g.marker, 5000)).toEqual([]);
  }, 90_000);

  const quietGateway = async () => {
    const g = run({
      NODE_ENV: "test",
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      SHUTDOWN_GRACE_SECONDS: "2",
      SECRET_KEY: "k".repeat(32),
      ADMIN_API_KEY: "a".repeat(32),
      // Thousands of keyless requests from one address, to fill its log pipe: not a limit's test.
      ENDPOINT_LIMITS: "anonymous=100000/60",
    });
    const port = Number((await g.waitFor(/"port":(\d+)[^\n]*"msg":"listening"/))[1]);
    return { g, url: `http://127.0.0.1:${port}` };
  };
  const expectExitWithinGrace = async (g: Started) => {
    const signalledAt = Date.now();
    g.child.kill("SIGTERM");
    const { code, at } = await within(g.exited, 20_000, "exit after SIGTERM");
    expect(code).toBe(0);
    expect(at - signalledAt).toBeLessThan(2000 + 3000);
    expect(await waitUntilNoneMarked(g.marker, 5000)).toEqual([]);
  };

  it("leaves no bundled worker behind on SIGTERM, even one that cannot answer it (its event loop held)", async () => {
    const { g } = await quietGateway();
    const worker = processesMarked(g.marker).find((p) => p.command.includes("workers/main"));
    expect(worker).toBeDefined();
    // Stopped, it runs no handler at all: as a worker whose every tick is taken by one call.
    process.kill(worker!.pid, "SIGSTOP");
    g.child.kill("SIGTERM");
    await within(g.exited, 20_000, "exit after SIGTERM");
    expect(await waitUntilNoneMarked(g.marker, 8000)).toEqual([]);
  }, 60_000);

  it("keeps serving when its stdout reader is gone", async () => {
    const { g, url } = await quietGateway();
    g.child.stdout!.destroy(); // the reader goes away, as when a supervisor dies
    // Each request writes a log line: far more than the sink's buffer, so writes hit EPIPE.
    for (let i = 0; i < 300; i++) expect((await fetch(`${url}/v1/tools/hash`)).status).toBe(200);
    expect(g.child.exitCode).toBeNull();
    await expectExitWithinGrace(g);
  }, 90_000);

  it("keeps serving, and ends within its grace period on SIGTERM, while its stdout reader has stopped reading (a full pipe)", async () => {
    const { g, url } = await quietGateway();
    g.child.stdout!.pause(); // the reader is alive but reads nothing: the pipe fills up
    // ~120 bytes of log per request: well past what the socket pair and the reader's buffer hold.
    for (let i = 0; i < 2000; i++) expect((await fetch(`${url}/v1/tools/hash`)).status).toBe(200);
    await expectExitWithinGrace(g);
  }, 90_000);
});

describe("starting", () => {
  let busy: TcpServer | undefined;
  afterAll(() => busy?.close());

  it("on a busy port fails at once with one line, prints no key and starts no child", async () => {
    busy = createTcpServer().listen(0, "127.0.0.1");
    await new Promise((r) => busy!.once("listening", r));
    const port = (busy.address() as { port: number }).port;
    const g = run({ NODE_ENV: "development", PORT: String(port), HOST: "127.0.0.1" });
    const { code } = await within(g.exited, 30_000, "exit");
    expect(code).toBe(1);
    expect(g.stderr()).toBe(`Toolgate could not start: port ${port} is in use; set PORT\n`);
    expect(g.stdout()).not.toContain("x-api-key");
    expect(await waitUntilNoneMarked(g.marker, 5000)).toEqual([]);
  }, 60_000);

  it("tool workers started on their own on a busy port fail with the same one line", async () => {
    busy ??= createTcpServer().listen(0, "127.0.0.1");
    if (!busy.listening) await new Promise((r) => busy!.once("listening", r));
    const port = (busy.address() as { port: number }).port;
    const config = loadWorkerConfig({ PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "silent" });
    await expect(startWorkers(config)).rejects.toThrow(`port ${port} is in use; set PORT`);
  });

  it("with WEB_CONCURRENCY=2, fails at once on a busy port, and stops (leaving no child) when its gateway processes cannot start", async () => {
    busy ??= createTcpServer().listen(0, "127.0.0.1");
    if (!busy.listening) await new Promise((r) => busy!.once("listening", r));
    const port = (busy.address() as { port: number }).port;
    const onBusyPort = run({
      NODE_ENV: "development",
      PORT: String(port),
      HOST: "127.0.0.1",
      WEB_CONCURRENCY: "2",
      REDIS_URL,
    });
    expect((await within(onBusyPort.exited, 30_000, "exit")).code).toBe(1);
    expect(onBusyPort.stderr()).toBe(
      `Toolgate could not start: port ${port} is in use; set PORT\n`,
    );
    expect(await waitUntilNoneMarked(onBusyPort.marker, 5000)).toEqual([]);

    // Each forked process fails its start (its store is unreachable): the primary stops, once.
    const unstartable = run({
      NODE_ENV: "development",
      PORT: "0",
      HOST: "127.0.0.1",
      DEV_CHAIN: "0",
      WEB_CONCURRENCY: "2",
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
    });
    expect((await within(unstartable.exited, 60_000, "exit")).code).toBe(1);
    expect(unstartable.stdout()).toContain("a gateway process could not start: stopping");
    expect(unstartable.stdout()).not.toContain("starting another");
    expect(await waitUntilNoneMarked(unstartable.marker, 5000)).toEqual([]);
  }, 120_000);

  it("stops every child it had started when a later step fails (an unreachable Redis)", async () => {
    const g = run({
      NODE_ENV: "development",
      PORT: "0",
      HOST: "127.0.0.1",
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
    });
    const { code } = await within(g.exited, 60_000, "exit");
    expect(code).toBe(1);
    expect(g.stderr()).toMatch(
      /^Toolgate could not start: the store at REDIS_URL cannot be used: .+\n$/,
    );
    expect(await waitUntilNoneMarked(g.marker, 5000)).toEqual([]);
  }, 90_000);

  it("refuses a REDIS_URL database the Redis does not have, writing nothing to database 0 (development: stops; production: not ready, 503)", async () => {
    const prefix = uniquePrefix("nodb");
    const db0 = new Redis(REDIS_URL);
    try {
      const dev = run({
        NODE_ENV: "development",
        PORT: "0",
        HOST: "127.0.0.1",
        DEV_CHAIN: "0",
        REDIS_URL: `${REDIS_URL}/99`,
        REDIS_KEY_PREFIX: prefix,
      });
      const { code } = await within(dev.exited, 60_000, "exit");
      expect(code).toBe(1);
      expect(dev.stderr()).toMatch(
        /^Toolgate could not start: the store at REDIS_URL cannot be used: REDIS_URL names database 99, which this Redis cannot select \(ERR DB index is out of range\)\n$/,
      );

      const port = await freePort();
      const prod = run({
        NODE_ENV: "production",
        PORT: String(port),
        HOST: "127.0.0.1",
        REDIS_URL: `${REDIS_URL}/99`,
        REDIS_KEY_PREFIX: prefix,
        ADMIN_API_KEY: "a".repeat(24),
        SECRET_KEY: "s".repeat(32),
        PUBLIC_BASE_URL: "https://api.example.com",
        SMTP_URL: "smtp://127.0.0.1:1",
        MAIL_FROM: "no-reply@api.example.com",
        WORKERS_URL: "http://127.0.0.1:1",
      });
      await prod.waitFor(/"msg":"listening"/);
      const url = `http://127.0.0.1:${port}`;
      expect((await fetch(`${url}/readyz`)).status).toBe(503);
      const signup = await fetch(`${url}/api/v1/signup`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: "nodb@example.com" }),
      });
      expect(signup.status).toBe(503);
      expect(await db0.keys(`${prefix}*`)).toEqual([]);
    } finally {
      await dropPrefix(prefix);
      db0.disconnect();
    }
  }, 120_000);

  it("with LOG_LEVEL=warn prints its development key and serves (readiness never waits for a log line)", async () => {
    const port = await freePort();
    const g = run({
      NODE_ENV: "development",
      PORT: String(port),
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
      DEV_CHAIN: "0",
    });
    const key = (await g.waitFor(/x-api-key: (tg_live_\S+)/))[1]!;
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/account`, {
      headers: { "x-api-key": key },
    });
    expect(res.status).toBe(200);
    expect(g.stdout()).not.toContain('"level":30'); // nothing at info level was written
  }, 90_000);

  it("waits for the bundled workers a bounded time, then says so", async () => {
    await expect(
      startBundledWorkers(pino({ level: "silent" }), { readyTimeoutMs: 1 }),
    ).rejects.toThrow("the bundled workers did not report ready within 0.001 s");
  });

  it("kills and restarts bundled workers whose event loop stopped running, on the same port", async () => {
    const workers = await startBundledWorkers(pino({ level: "silent" }), { stallMs: 1500 });
    const healthy = () =>
      fetch(`${workers.url}/healthz`, { signal: AbortSignal.timeout(500) }).then(
        (r) => r.status === 200,
        () => false,
      );
    try {
      const stuck = workers.pid()!;
      expect(await healthy()).toBe(true);
      process.kill(stuck, "SIGSTOP"); // alive, but its loop never runs: as a call that never ends
      expect(await healthy()).toBe(false);
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline && !(workers.pid() !== stuck && (await healthy())))
        await new Promise((r) => setTimeout(r, 200));
      expect(workers.pid()).not.toBe(stuck);
      expect(await healthy()).toBe(true);
      expect(() => process.kill(stuck, 0)).toThrow(); // the stuck process is gone
    } finally {
      await workers.stop();
    }
  }, 30_000);
});

describe("a workers process run on its own (as docker compose runs it)", () => {
  it("ends itself when its event loop stops running, so its supervisor restarts it", async () => {
    const workers = await spawnService(
      "src/workers/main.ts",
      "workers listening",
      { PORT: "0", EVENT_LOOP_STALL_MS: "1500" },
      ["--import", new URL("../helpers/faults/hold-loop-on-sigusr2.mjs", import.meta.url).pathname],
    );
    let stderr = "";
    workers.child.stderr!.on("data", (d) => (stderr += d));
    const exited = once(workers.child, "exit");
    try {
      expect((await fetch(`${workers.url}/healthz`)).status).toBe(200);
      const held = Date.now();
      workers.child.kill("SIGUSR2"); // its loop now spins for good: it answers nothing
      const [code, signal] = await within(exited, 15_000, "the stuck process to end");
      // Killed, not exited cleanly: a supervisor (compose `restart: unless-stopped`) starts another.
      expect({ code, signal }).toEqual({ code: null, signal: "SIGKILL" });
      expect(Date.now() - held).toBeGreaterThanOrEqual(1500);
      const line = JSON.parse(stderr.trim().split("\n").at(-1)!) as Record<string, unknown>;
      expect(line).toMatchObject({ level: 60, service: "toolgate-workers" });
      expect(line.msg).toMatch(/event loop has not run for \d+ s; ending the process/);
    } finally {
      workers.child.kill("SIGKILL");
    }
  }, 60_000);

  it("keeps running while its loop runs, a busy one included", async () => {
    const workers = await spawnService("src/workers/main.ts", "workers listening", {
      PORT: "0",
      EVENT_LOOP_STALL_MS: "1500",
    });
    try {
      // Calls for longer than the stall limit: a loop that serves is never taken as stuck.
      const until = Date.now() + 3000;
      while (Date.now() < until) {
        const res = await fetch(`${workers.url}/tools/hash`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ text: "still here" }),
        });
        expect(res.status).toBe(200);
      }
      expect(workers.child.exitCode).toBeNull();
      expect(workers.child.signalCode).toBeNull();
    } finally {
      await workers.stop();
    }
  }, 60_000);
});

describe("npm start with REDIS_URL (development)", () => {
  const prefix = uniquePrefix("devredis");
  afterAll(() => dropPrefix(prefix));

  it("prints a working development key, the admin key, the chain and the store, and a restart reuses the same account and keys", async () => {
    const port = await freePort();
    const env = {
      NODE_ENV: "development",
      PORT: String(port),
      HOST: "127.0.0.1",
      REDIS_URL,
      REDIS_KEY_PREFIX: prefix,
    };
    const first = run(env);
    const key = (await first.waitFor(/x-api-key: (tg_live_\S+)/))[1]!;
    const adminKey = (await first.waitFor(/Admin key: (tg_admin_\S+)/))[1]!;
    await first.waitFor(/CHAIN_RPC_URL=http:\/\/127\.0\.0\.1:\d+ TOOLGATE_URL=\S+ npm run pay/);
    expect(first.stdout()).toContain(`State: Redis at ${REDIS_URL} (key prefix ${prefix})`);
    expect(first.stdout()).toMatch(
      /Development account acct_\w+ \(created; pro tier, 1000 credits\)/,
    );
    const account = await fetch(`http://127.0.0.1:${port}/api/v1/account`, {
      headers: { "x-api-key": key },
    });
    expect(account.status).toBe(200);
    expect(await account.json()).toMatchObject({ tier: "pro", credits: 1000 });
    expect(
      (
        await fetch(`http://127.0.0.1:${port}/api/v1/admin/accounts`, {
          headers: { "x-api-key": adminKey },
        })
      ).status,
    ).toBe(200);
    first.child.kill("SIGTERM");
    await within(first.exited, 20_000, "exit");

    const second = run({ ...env, DEV_CHAIN: "0" });
    expect((await second.waitFor(/x-api-key: (tg_live_\S+)/))[1]).toBe(key);
    expect((await second.waitFor(/Admin key: (tg_admin_\S+)/))[1]).toBe(adminKey);
    expect(second.stdout()).toMatch(
      /Development account acct_\w+ \(reused; pro tier, 1000 credits\)/,
    );
    expect(
      (await fetch(`http://127.0.0.1:${port}/api/v1/account`, { headers: { "x-api-key": key } }))
        .status,
    ).toBe(200);
  }, 120_000);
});
