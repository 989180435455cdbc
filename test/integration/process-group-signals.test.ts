import { fork } from "node:child_process";
import { once } from "node:events";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { loadWorkerConfig } from "../../src/workers/config.js";
import { startWorkers } from "../../src/workers/main.js";
import { startFakeLlm } from "../helpers/fake-providers.js";
import { callTool } from "../helpers/gateway.js";
import {
  killMarked,
  processesMarked,
  startToolgate,
  waitUntilNoneMarked,
  type Started,
} from "../helpers/processes.js";
import { REDIS_URL, dropPrefix, uniquePrefix } from "../helpers/redis.js";

/**
 * A gateway and the children it supervises (bundled tool workers, the local chain) under the
 * signals a process group gets as a whole — systemd's KillMode=control-group, `timeout`, Ctrl-C
 * in a terminal: the gateway alone decides when its children stop, after its drain; it restarts
 * none once its shutdown has begun; and none is ever left behind. Real processes throughout.
 */
const started: Started[] = [];
/** A gateway (`npm start`'s sources under tsx) in a process group of its own. */
const run = (env: Record<string, string>) => {
  const g = startToolgate(env, undefined, { detached: true });
  started.push(g);
  return g;
};
afterEach(() => {
  for (const g of started.splice(0)) {
    g.child.kill("SIGKILL");
    killMarked(g.marker);
  }
});

let llm: Awaited<ReturnType<typeof startFakeLlm>>;
beforeAll(async () => {
  llm = await startFakeLlm();
});
afterAll(() => llm?.stop());

const within = <T>(promise: Promise<T>, ms: number, what: string) =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms),
    ),
  ]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const workersOf = (g: Started) =>
  processesMarked(g.marker).filter((p) => p.command.includes("workers/main"));

/** A development gateway (it prints its key) whose ai-generate calls reach the fake provider. */
async function developmentGateway(env: Record<string, string> = {}) {
  const g = run({
    NODE_ENV: "development",
    PORT: "0",
    HOST: "127.0.0.1",
    SHUTDOWN_GRACE_SECONDS: "15",
    AI_BASE_URL: `${llm.url}/v1`,
    AI_MODEL: "m",
    DATABASE_URL: "none", // no PGlite books: seconds of start-up this test does not need
    ...env,
  });
  const key = (await g.waitFor(/x-api-key: (tg_live_\S+)/))[1]!;
  const port = Number((await g.waitFor(/"port":(\d+)[^\n]*"msg":"listening"/))[1]);
  return { g, key, url: `http://127.0.0.1:${port}` };
}

describe("a signal to the gateway's whole process group", () => {
  it("drains calls in flight to their answers (the bundled workers, their heavy pool and the local chain stay for them), restarts nothing, and leaves nothing", async () => {
    const { g, key, url } = await developmentGateway();
    const rpc = (await g.waitFor(/CHAIN_RPC_URL=(\S+)/))[1]!;
    llm.state.delayMs = 4000;
    const before = llm.state.received;
    // A heavy call too: its pool's child processes are in the group as well.
    const heavy = callTool(url, key, "js-sandbox", {
      code: "let t = Date.now(); while (Date.now() - t < 2500) {}; 42",
      time_limit_ms: 5000,
    });
    const call = callTool(url, key, "ai-generate", { prompt: "slow" });
    await llm.reached(before + 1);
    await sleep(1000); // the heavy call's child is started and running it

    const signalledAt = Date.now();
    process.kill(-g.child.pid!, "SIGTERM"); // as systemd, `timeout` or `kill -- -PGID`
    await sleep(1000);
    // Mid-drain, the local chain still answers: a paid call in flight could still settle.
    const chainId = await fetch(rpc, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    }).then((r) => r.json() as Promise<{ result?: string }>);
    expect(chainId.result).toBe("0x14a34"); // 84532
    expect(workersOf(g)).toHaveLength(1);

    const answer = await call;
    expect([answer.status, answer.body.text]).toEqual([200, "echo: slow"]);
    const computed = await heavy;
    expect([computed.status, computed.body.result]).toEqual([200, 42]);
    const { code, at } = await within(g.exited, 30_000, "exit after the group's SIGTERM");
    expect(code).toBe(0);
    expect(at - signalledAt).toBeLessThan(15_000);
    expect(g.stdout()).not.toContain("restarting them");
    expect(await waitUntilNoneMarked(g.marker, 8000)).toEqual([]);
  }, 120_000);

  it("with WEB_CONCURRENCY=2 and only the heavy pool left to them, the bundled workers run once, and the whole group stops on one SIGINT (Ctrl-C) leaving nothing", async () => {
    const prefix = uniquePrefix("groupsig");
    const standalone = await startWorkers(loadWorkerConfig({ PORT: "0", LOG_LEVEL: "silent" }));
    let g: Started | undefined;
    try {
      const elsewhere = `http://127.0.0.1:${standalone.port}`;
      g = run({
        NODE_ENV: "test",
        PORT: "0",
        HOST: "127.0.0.1",
        WEB_CONCURRENCY: "2",
        REDIS_URL,
        REDIS_KEY_PREFIX: prefix,
        SECRET_KEY: "s".repeat(32),
        ADMIN_API_KEY: "a".repeat(32),
        WORKER_POOL_GENERAL_URL: elsewhere,
        WORKER_POOL_PROVIDER_URL: elsewhere,
      });
      await g.waitFor(/"msg":"primary started"/);
      // Both gateway processes are serving.
      const listening = () => (g!.stdout().match(/"msg":"listening"/g) ?? []).length;
      const deadline = Date.now() + 60_000;
      while (listening() < 2 && Date.now() < deadline) await sleep(100);
      expect(listening()).toBe(2);
      expect(workersOf(g)).toHaveLength(1);
      expect(g.stdout().match(/"msg":"workers listening"/g) ?? []).toHaveLength(1);

      process.kill(-g.child.pid!, "SIGINT"); // Ctrl-C in the terminal that runs it
      expect((await within(g.exited, 30_000, "exit after the group's SIGINT")).code).toBe(0);
      expect(g.stdout()).not.toContain("restarting them");
      expect(await waitUntilNoneMarked(g.marker, 8000)).toEqual([]);
    } finally {
      // Its processes first: their open connections would keep the standalone workers' stop waiting.
      g?.child.kill("SIGKILL");
      if (g) killMarked(g.marker);
      standalone.server.closeAllConnections();
      await standalone.stop();
      await dropPrefix(prefix);
    }
  }, 120_000);
});

describe("a gateway that has begun shutting down", () => {
  it("does not restart bundled workers that exit during its drain", async () => {
    const { g, key, url } = await developmentGateway({ DEV_CHAIN: "0" });
    llm.state.delayMs = 3000;
    const before = llm.state.received;
    const call = callTool(url, key, "ai-generate", { prompt: "cut" });
    await llm.reached(before + 1);
    const [workers] = workersOf(g);
    expect(workers).toBeDefined();

    g.child.kill("SIGTERM"); // the gateway alone: it drains
    await sleep(300);
    process.kill(workers!.pid, "SIGKILL"); // the workers die during the drain
    expect((await call).status).toBe(503); // that call is lost (and not charged)
    await sleep(1500); // a restart comes 200 ms after an exit
    expect(workersOf(g)).toEqual([]);
    expect(g.stdout()).not.toContain("restarting them");
    expect((await within(g.exited, 30_000, "exit after SIGTERM")).code).toBe(0);
    expect(await waitUntilNoneMarked(g.marker, 8000)).toEqual([]);
  }, 120_000);
});

describe("bundled workers whose gateway is gone before they are ready", () => {
  it("leave quietly: no unhandled 'error' (EPIPE, ERR_IPC_CHANNEL_CLOSED) from telling it they are ready", async () => {
    const child = fork(new URL("../../src/workers/main.ts", import.meta.url).pathname, [], {
      execArgv: ["--import", "tsx"],
      env: { PATH: process.env.PATH, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "silent" },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    let stderr = "";
    child.stderr!.on("data", (d) => (stderr += d));
    const exited = once(child, "exit");
    // The channel closes long before the workers can listen (loading them takes a second):
    // as when the gateway is stopped during its start-up.
    child.disconnect();
    try {
      const [code, signal] = await within(exited, 20_000, "the workers' exit");
      expect(stderr).toBe("");
      expect({ code, signal }).toEqual({ code: 0, signal: null });
    } finally {
      child.kill("SIGKILL");
    }
  }, 30_000);
});
