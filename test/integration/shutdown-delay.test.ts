import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadWorkerConfig } from "../../src/workers/config.js";
import { startWorkers } from "../../src/workers/main.js";
import {
  call,
  callTool,
  dropPrefix,
  fundedAccount,
  spawnGateway,
  uniquePrefix,
  type GatewayProcess,
} from "../helpers/gateway.js";

/**
 * SHUTDOWN_DELAY_SECONDS: on SIGTERM a gateway first answers /readyz 503, saying it is shutting
 * down, while it still serves every other request; only after the delay does its listener close.
 * In one process and in each process of a WEB_CONCURRENCY cluster alike.
 */
const DELAY_SECONDS = 3;
let workers: Awaited<ReturnType<typeof startWorkers>>;
beforeAll(async () => {
  workers = await startWorkers(loadWorkerConfig({ PORT: "0", LOG_LEVEL: "silent" }));
});
afterAll(() => workers?.stop());

describe.each([1, 2])("a gateway of %i process(es) told to stop", (processes) => {
  const prefix = uniquePrefix("shutdown-delay");
  let g: GatewayProcess;
  beforeAll(async () => {
    g = await spawnGateway(prefix, {
      WORKERS_URL: `http://127.0.0.1:${workers.port}`,
      SHUTDOWN_DELAY_SECONDS: String(DELAY_SECONDS),
      WEB_CONCURRENCY: String(processes),
    });
    // Every process serving, not only the first to say so.
    const deadline = Date.now() + 30_000;
    while (g.output.filter((l) => l.includes('"msg":"listening"')).length < processes) {
      if (Date.now() > deadline) throw new Error("the gateway processes did not all start");
      await new Promise((r) => setTimeout(r, 50));
    }
  }, 60_000);
  afterAll(async () => {
    await g?.stop("SIGKILL");
    await dropPrefix(prefix);
  });

  it("answers /readyz 503 shutting_down during the delay while a tool call still succeeds, then exits", async () => {
    const { key } = await fundedAccount(g.url, 100);
    expect((await call(`${g.url}/readyz`)).status).toBe(200);
    const signalled = Date.now();
    const exited = once(g.child, "exit");
    g.child.kill("SIGTERM");
    // The signal is handled in a moment: from then on, readiness is refused.
    let readyz = await call(`${g.url}/readyz`);
    while (readyz.status === 200 && Date.now() - signalled < 1000)
      readyz = await call(`${g.url}/readyz`);
    expect([readyz.status, readyz.body]).toEqual([503, { status: "shutting_down" }]);
    // Each process answers so (node:cluster hands the connections out in turn).
    for (let i = 0; i < 4 * processes; i++)
      expect((await call(`${g.url}/readyz`)).body).toEqual({ status: "shutting_down" });
    const tool = await callTool(g.url, key, "hash", { text: "still served" });
    expect([tool.status, tool.headers.get("x-credits-charged")]).toEqual([200, "1"]);
    expect((await call(`${g.url}/healthz`)).status).toBe(200);
    expect(Date.now() - signalled).toBeLessThan(DELAY_SECONDS * 1000);

    const [code] = await exited;
    expect(code).toBe(0);
    expect(Date.now() - signalled).toBeGreaterThanOrEqual(DELAY_SECONDS * 1000);
    await expect(fetch(`${g.url}/healthz`)).rejects.toThrow();
  }, 30_000);
});

describe("a gateway with the longest grace period told to stop", () => {
  const prefix = uniquePrefix("shutdown-longest");
  let g: GatewayProcess;
  beforeAll(async () => {
    g = await spawnGateway(prefix, {
      WORKERS_URL: `http://127.0.0.1:${workers.port}`,
      SHUTDOWN_DELAY_SECONDS: "1",
      // The setting's largest value: with the delay and the clean-up, the forced exit's timer
      // would pass a Node timer's longest, which Node fires at once.
      SHUTDOWN_GRACE_SECONDS: String(Math.floor((2 ** 31 - 1) / 1000)),
    });
  }, 60_000);
  afterAll(async () => {
    await g?.stop("SIGKILL");
    await dropPrefix(prefix);
  });

  it("still waits out its delay and stops cleanly, not forced out at once", async () => {
    const signalled = Date.now();
    const exited = once(g.child, "exit");
    g.child.kill("SIGTERM");
    const [code] = await exited;
    expect([code, Date.now() - signalled >= 1000]).toEqual([0, true]);
  }, 30_000);
});
