import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadWorkerConfig } from "../../src/workers/config.js";
import { startWorkers } from "../../src/workers/main.js";
import { startPrivateRedis } from "../helpers/redis-server.js";
import {
  call,
  dropPrefix,
  spawnGateway,
  startGateway,
  uniquePrefix,
  type GatewayProcess,
  type TestGateway,
} from "../helpers/gateway.js";
import { spawnPaidGateway, startChains } from "../helpers/x402.js";

/**
 * The status page's checks run in the background on an interval: a component whose check fails
 * turns "degraded" within one interval and recovers, and uptime counts the checks every gateway
 * process recorded in the shared Redis.
 */
const INTERVAL_MS = 300;
type Workers = Awaited<ReturnType<typeof startWorkers>>;

const statusOf = async (url: string) => (await call(`${url}/status.json`)).body;
const componentOf = async (url: string, id: string) =>
  (await statusOf(url)).components.find((c: { id: string }) => c.id === id);

async function waitFor<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs: number,
): Promise<{ value: T; elapsedMs: number }> {
  const started = Date.now();
  for (;;) {
    const value = await read();
    if (done(value)) return { value, elapsedMs: Date.now() - started };
    if (Date.now() - started > timeoutMs)
      throw new Error(`not reached within ${timeoutMs} ms: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The workers go away at once, as a crashed process would: open keep-alive connections included. */
async function stopNow(workers: Workers | undefined): Promise<void> {
  if (!workers) return;
  const stopping = workers.stop();
  workers.server.closeAllConnections();
  await stopping;
}

/**
 * A worker pool that is up but unhealthy: /healthz answers 503. (A closed port is not enough here:
 * another test file's server may be given the same port while this one runs.)
 */
async function unhealthyPool(): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) => res.writeHead(503).end());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server };
}

describe("with x402 payments on", () => {
  let chains: Awaited<ReturnType<typeof startChains>>;
  let paid: Awaited<ReturnType<typeof spawnPaidGateway>>;
  beforeAll(async () => {
    chains = await startChains([]);
    paid = await spawnPaidGateway("status-x402", chains.env, {
      STATUS_CHECK_INTERVAL_MS: String(INTERVAL_MS),
    });
  }, 90_000);
  afterAll(async () => {
    await paid?.stop();
    await chains?.stop();
  });

  it("shows MCP operational: it serves callers without a key, so its probe is answered 200", async () => {
    // Three rounds of checks (the first may run before the gateway listens).
    await new Promise((r) => setTimeout(r, INTERVAL_MS * 3));
    const { value: mcp } = await waitFor(
      () => componentOf(paid.gw.url, "mcp"),
      (c) => c.state !== "unknown",
      5_000,
    );
    expect([mcp.state, mcp.detail ?? null]).toEqual(["operational", null]);
    expect((await statusOf(paid.gw.url)).status).toBe("operational");
  });

  it("keeps MCP operational while callers without a key on its own address are rate limited (a 429 is the door serving)", async () => {
    const ping = () =>
      fetch(`${paid.gw.url}/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
      });
    let refused = false;
    for (let i = 0; i < 200 && !refused; i++) refused = (await ping()).status === 429;
    expect(refused).toBe(true);
    await new Promise((r) => setTimeout(r, INTERVAL_MS * 3));
    const mcp = await componentOf(paid.gw.url, "mcp");
    expect([mcp.state, mcp.detail ?? null]).toEqual(["operational", null]);
  });

  it("has /llms.txt tell a model with a wallet how to pay, on this gateway's networks", async () => {
    const llms = await (await fetch(`${paid.gw.url}/llms.txt`)).text();
    const { networks } = (await call(`${paid.gw.url}/.well-known/x402`)).body;
    expect(networks.length).toBeGreaterThan(0);
    expect(llms).toContain("Sign the EIP-3009 authorization it describes");
    expect(llms).toContain('retry it with the v2 payment in `params._meta["x402/payment"]`');
    expect(llms).toContain("/.well-known/x402");
    for (const network of networks) expect(llms).toContain(network);
  });
});

describe("a failing component", () => {
  let workers: Workers;
  let gw: TestGateway;
  beforeAll(async () => {
    workers = await startWorkers(loadWorkerConfig({ PORT: "0", LOG_LEVEL: "silent" }));
    gw = await startGateway({
      env: {
        WORKERS_URL: `http://127.0.0.1:${workers.port}`,
        STATUS_CHECK_INTERVAL_MS: String(INTERVAL_MS),
      },
    });
  });
  afterAll(async () => {
    await gw?.stop();
    await stopNow(workers);
  });

  it("turns degraded on /status.json within one check interval, and recovers", async () => {
    await waitFor(
      () => componentOf(gw.url, "worker-pool-general"),
      (c) => c?.state === "operational",
      10_000,
    );
    const port = workers.port;
    await stopNow(workers);
    const down = await waitFor(
      () => componentOf(gw.url, "worker-pool-general"),
      (c) => c.state === "degraded",
      5_000,
    );
    // One interval, plus what a loaded two-core machine adds to a timer and a refused connection.
    expect(down.elapsedMs).toBeLessThan(INTERVAL_MS + 700);
    expect(down.value.detail).toEqual(expect.any(String));
    expect((await statusOf(gw.url)).status).toBe("degraded");
    // The other components are unaffected.
    expect((await componentOf(gw.url, "rest-api")).state).toBe("operational");

    workers = await startWorkers(loadWorkerConfig({ PORT: String(port), LOG_LEVEL: "silent" }));
    const up = await waitFor(
      () => componentOf(gw.url, "worker-pool-general"),
      (c) => c.state === "operational",
      5_000,
    );
    expect(up.elapsedMs).toBeLessThan(INTERVAL_MS + 700);
    expect(up.value.uptime_90d).toBeGreaterThan(0);
    expect(up.value.uptime_90d).toBeLessThan(100);
  });
});

describe("latency percentiles", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      store: "memory",
      env: { STATUS_CHECK_INTERVAL_MS: String(INTERVAL_MS) },
    });
  });
  afterAll(() => gw?.stop());

  it("come from the requests the gateway served on the component's routes, not from the status probes", async () => {
    await new Promise((r) => setTimeout(r, INTERVAL_MS * 4)); // several rounds of probes to /mcp and /readyz
    expect((await componentOf(gw.url, "mcp")).latency_ms).toMatchObject({
      source: "http",
      samples: 0,
      p50: null,
    });
    for (let i = 0; i < 3; i++)
      await call(`${gw.url}/mcp`, {
        body: { jsonrpc: "2.0", id: 1, method: "ping" },
        headers: { accept: "application/json, text/event-stream" },
      });
    await new Promise((r) => setTimeout(r, INTERVAL_MS + 50)); // past the report's cache
    const mcp = (await componentOf(gw.url, "mcp")).latency_ms;
    expect(mcp.samples).toBe(3);
    expect(mcp.p50).toBeGreaterThan(0);
    expect(mcp.p99).toBeGreaterThanOrEqual(mcp.p50);
  });
});

describe("uptime", () => {
  const prefix = uniquePrefix("status");
  let workers: Workers;
  let healthy: GatewayProcess;
  let broken: GatewayProcess;
  let unhealthy: Awaited<ReturnType<typeof unhealthyPool>>;
  beforeAll(async () => {
    unhealthy = await unhealthyPool();
    workers = await startWorkers(loadWorkerConfig({ PORT: "0", LOG_LEVEL: "silent" }));
    const live = `http://127.0.0.1:${workers.port}`;
    const env = { STATUS_CHECK_INTERVAL_MS: String(INTERVAL_MS), LOG_LEVEL: "info" };
    // Two processes on one Redis: one sees the general pool, the other one whose health check fails.
    [healthy, broken] = await Promise.all([
      spawnGateway(prefix, { ...env, WORKERS_URL: live }),
      spawnGateway(prefix, {
        ...env,
        WORKER_POOL_GENERAL_URL: unhealthy.url,
        WORKER_POOL_PROVIDER_URL: live,
      }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([healthy?.stop(), broken?.stop()]);
    await stopNow(workers);
    unhealthy?.server.close();
    await dropPrefix(prefix);
  });

  it("is computed from the checks every process recorded, and both processes show the same figure", async () => {
    await new Promise((r) => setTimeout(r, INTERVAL_MS * 8));
    const [fromHealthy, fromBroken] = await Promise.all([
      componentOf(healthy.url, "worker-pool-general"),
      componentOf(broken.url, "worker-pool-general"),
    ]);
    for (const view of [fromHealthy, fromBroken]) {
      // One process alone would give 100% (the healthy one) or 0% (the broken one). The share
      // itself depends on how long each process has been checking: on a loaded machine one
      // may be up many rounds before the other.
      expect(view.uptime_90d).toBeGreaterThan(0);
      expect(view.uptime_90d).toBeLessThan(100);
      expect(view.days.at(-1).total).toBeGreaterThanOrEqual(8);
    }
    expect(
      Math.abs(fromHealthy.days.at(-1).total - fromBroken.days.at(-1).total),
    ).toBeLessThanOrEqual(4);
    // A component both processes find healthy stays at 100%.
    expect((await componentOf(broken.url, "rest-api")).uptime_90d).toBe(100);
  });
});

describe("when Redis stops", () => {
  let redis: Awaited<ReturnType<typeof startPrivateRedis>>;
  let workers: Workers;
  let gw: GatewayProcess;
  beforeAll(async () => {
    redis = await startPrivateRedis();
    workers = await startWorkers(loadWorkerConfig({ PORT: "0", LOG_LEVEL: "silent" }));
    gw = await spawnGateway("status-redis:", {
      REDIS_URL: redis.url,
      WORKERS_URL: `http://127.0.0.1:${workers.port}`,
      STATUS_CHECK_INTERVAL_MS: String(INTERVAL_MS),
    });
  });
  afterAll(async () => {
    await gw?.stop();
    await stopNow(workers);
    await redis?.stop();
  });

  it("the status page still answers, from this process's own checks, showing the REST API degraded; history returns with Redis", async () => {
    await waitFor(
      () => statusOf(gw.url),
      (s) =>
        s.history_available &&
        s.components.find((c: { id: string }) => c.id === "rest-api")?.state === "operational",
      10_000,
    );
    await redis.kill();
    const down = await waitFor(
      () => statusOf(gw.url),
      (s) => s.components?.find((c: { id: string }) => c.id === "rest-api")?.state === "degraded",
      10_000,
    );
    expect(down.value.history_available).toBe(false);
    expect(down.value.status).toBe("degraded");
    expect((await fetch(`${gw.url}/status`)).status).toBe(200);
    await redis.restart();
    const back = await waitFor(
      () => statusOf(gw.url),
      (s) =>
        s.history_available &&
        s.components.find((c: { id: string }) => c.id === "rest-api")?.state === "operational",
      15_000,
    );
    expect(
      back.value.components.find((c: { id: string }) => c.id === "rest-api").uptime_90d,
    ).toBeGreaterThan(0);
  });
});
