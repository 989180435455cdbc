import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  spawnGateway,
  startGateway,
  uniquePrefix,
  type GatewayProcess,
  type TestGateway,
} from "../helpers/gateway.js";
import { startPrivateRedis } from "../helpers/redis-server.js";

/**
 * What an orchestrator and a scraper poll (/healthz, /readyz, /metrics) answers them in time and
 * under a limit of its own: never 429 because the address's page views spent the anonymous
 * limit, never waiting on a Redis that does not answer. The 3 s is the Dockerfile's
 * HEALTHCHECK timeout.
 */
const PROBE_TIMEOUT_MS = 3000;
const probe = (url: string, headers: Record<string, string> = {}) =>
  fetch(url, { headers, signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });

describe("with Redis paused", () => {
  let redis: Awaited<ReturnType<typeof startPrivateRedis>>;
  let gw: GatewayProcess;
  beforeAll(async () => {
    redis = await startPrivateRedis({ durable: false });
    gw = await spawnGateway(uniquePrefix("probes"), { REDIS_URL: redis.url });
  });
  afterAll(async () => {
    await gw?.stop();
    await redis?.stop();
  });

  it("/healthz answers, and /metrics answers without the store's gauges, saying how many were late", async () => {
    expect(await (await probe(`${gw.url}/metrics`)).text()).toMatch(
      /^toolgate_scrape_collectors_late 0$/m,
    );
    redis.pause();
    try {
      const health = await probe(`${gw.url}/healthz`);
      expect([health.status, await health.json()]).toEqual([200, { status: "ok" }]);
      const scrape = await probe(`${gw.url}/metrics`);
      const text = await scrape.text();
      expect(scrape.status).toBe(200);
      expect(text).toMatch(/^toolgate_scrape_collectors_late [1-9]\d*$/m);
      expect(text).toMatch(/^toolgate_process_resident_memory_bytes \d+/m);
    } finally {
      redis.resume();
    }
  }, 30_000);
});

describe("probes are counted by a limit of their own", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      store: "memory",
      env: { ENDPOINT_LIMITS: "anonymous=3/60,probes=4/60" },
    });
  });
  afterAll(() => gw.stop());

  it("an address that spent its anonymous limit is still answered on /healthz, /readyz and /metrics, up to the probes' limit", async () => {
    const from = { "x-forwarded-for": "203.0.113.7" };
    const pages = [];
    for (let i = 0; i < 4; i++) pages.push((await probe(`${gw.url}/v1/tools`, from)).status);
    expect(pages).toEqual([200, 200, 200, 429]);

    const probes = [];
    for (const path of ["/healthz", "/readyz", "/metrics", "/healthz"]) {
      const res = await probe(`${gw.url}${path}`, from);
      probes.push([path, res.status, res.headers.get("ratelimit-policy")]);
    }
    expect(probes).toEqual([
      ["/healthz", 200, "4;w=60"],
      ["/readyz", 200, "4;w=60"],
      ["/metrics", 200, "4;w=60"],
      ["/healthz", 200, "4;w=60"],
    ]);
    const refused = await probe(`${gw.url}/healthz`, from);
    expect([refused.status, Number(refused.headers.get("retry-after")) > 0]).toEqual([429, true]);
    expect((await refused.json()).error).toMatchObject({
      code: "rate_limited",
      message: expect.stringContaining("health and metrics probes per minute per client address"),
    });
    // Another address has its own count.
    expect((await probe(`${gw.url}/healthz`, { "x-forwarded-for": "203.0.113.8" })).status).toBe(
      200,
    );
  });

  it("past 10,000 addresses in a window, an orchestrator on a private or loopback address still has a count of its own", async () => {
    // The window is fixed (60 s, on the clock): the flood must fit in one, so when less than 40 s
    // of this one is left, it waits for the next (RateLimit-Reset says how long).
    const first = await fetch(`${gw.url}/healthz`, { headers: { "x-forwarded-for": "10.9.9.9" } });
    const left = Number(first.headers.get("ratelimit-reset"));
    if (left < 40) await new Promise((r) => setTimeout(r, (left + 1) * 1000));
    // 10,000 public addresses, one probe each (documentation ranges), then 4 more to spend the
    // count new public addresses share past the cap.
    const addresses = Array.from(
      { length: 10_004 },
      (_, i) => `2001:db8:${(i >> 8).toString(16)}:${(i & 0xff).toString(16)}::1`,
    );
    for (let next = 0; next < addresses.length; ) {
      const batch = addresses.slice(next, (next += 32));
      await Promise.all(
        batch.map((address) =>
          fetch(`${gw.url}/healthz`, { headers: { "x-forwarded-for": address } }).then((r) =>
            r.arrayBuffer(),
          ),
        ),
      );
    }
    const from = (address: string) =>
      probe(`${gw.url}/healthz`, { "x-forwarded-for": address }).then((r) => r.status);
    expect(await from("2001:db8:ffff::1")).toBe(429); // a new public address: the shared count
    expect(await from("10.1.2.3")).toBe(200); // a kubelet, a load balancer on the private network
    expect(await from("127.0.0.1")).toBe(200); // the container's own HEALTHCHECK
  }, 90_000);
});

describe("CORS preflights are counted by a limit of their own", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      store: "memory",
      env: { ENDPOINT_LIMITS: "anonymous=2/60,preflights=3/60" },
    });
  });
  afterAll(() => gw.stop());

  it("answers preflights up to `preflights` per address, then 429 in the error shape; they spend nothing of `anonymous`", async () => {
    const preflight = (address: string) =>
      fetch(`${gw.url}/v1/tools/hash`, {
        method: "OPTIONS",
        headers: {
          origin: "https://app.example",
          "access-control-request-method": "POST",
          "x-forwarded-for": address,
        },
      });
    const answered = [];
    for (let i = 0; i < 3; i++) {
      const res = await preflight("203.0.113.9");
      answered.push([res.status, res.headers.get("access-control-allow-methods") !== null]);
    }
    expect(answered).toEqual([
      [204, true],
      [204, true],
      [204, true],
    ]);
    const refused = await preflight("203.0.113.9");
    expect([refused.status, Number(refused.headers.get("retry-after")) > 0]).toEqual([429, true]);
    expect((await refused.json()).error).toMatchObject({
      code: "rate_limited",
      message: expect.stringContaining("CORS preflight requests"),
    });
    // Another address has its own count, and the first still has its anonymous budget.
    expect((await preflight("203.0.113.10")).status).toBe(204);
    const page = await fetch(`${gw.url}/v1/tools`, {
      headers: { "x-forwarded-for": "203.0.113.9" },
    });
    expect(page.status).toBe(200);
  });
});
