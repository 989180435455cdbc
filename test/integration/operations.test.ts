import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  callTool,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({
    env: { METRICS_TOKEN: "m".repeat(20), HEADERS_TIMEOUT_MS: "1000", REQUEST_TIMEOUT_MS: "2000" },
  });
});
afterAll(() => gw.stop());

const metrics = async () => {
  const res = await fetch(`${gw.url}/metrics`, {
    headers: { authorization: `Bearer ${"m".repeat(20)}` },
  });
  return { status: res.status, text: await res.text() };
};
const sample = (text: string, name: string, labels: string) => {
  const line = text
    .split("\n")
    .find((l) => l.startsWith(`${name}{`) && labels.split(",").every((kv) => l.includes(kv)));
  return line ? Number(line.split(" ").at(-1)) : 0;
};

describe("GET /metrics", () => {
  it("counts requests by route pattern, tool calls, credits and errors — and needs its token", async () => {
    for (const authorization of [undefined, "Bearer wrong-token-wrong-token"]) {
      const refused = await fetch(`${gw.url}/metrics`, {
        headers: authorization ? { authorization } : {},
      });
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toBe('Bearer realm="metrics"');
      // The one error shape, as every other refusal.
      expect(await refused.json()).toEqual({
        error: {
          type: "authentication_error",
          code: "metrics_token_required",
          message: expect.stringContaining("METRICS_TOKEN"),
          request_id: refused.headers.get("x-request-id"),
        },
      });
    }
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const before = (await metrics()).text;
    for (let i = 0; i < 3; i++) await callTool(gw.url, key, "hash", { text: String(i) });
    await callTool(gw.url, key, "hash", { text: 1 });
    await callTool(gw.url, "tg_live_nope", "hash", { text: "x" });
    const { status, text } = await metrics();
    expect(status).toBe(200);
    const delta = (name: string, labels: string) =>
      sample(text, name, labels) - sample(before, name, labels);
    expect(
      delta("toolgate_http_requests_total", 'route="/v1/tools/:name",method="POST",status="200"'),
    ).toBe(3);
    expect(
      delta("toolgate_http_requests_total", 'route="/v1/tools/:name",method="POST",status="422"'),
    ).toBe(1);
    expect(delta("toolgate_tool_calls_total", 'tool="hash",outcome="ok"')).toBe(3);
    // Each served call's time, split as its Server-Timing splits it: the tool's (by tool) and the
    // gateway's own. The refused calls reached no worker and are in neither.
    expect(delta("toolgate_tool_duration_seconds_count", 'tool="hash"')).toBe(3);
    const gatewayCalls = (t: string) =>
      Number(/^toolgate_gateway_duration_seconds_count (\d+)$/m.exec(t)?.[1] ?? 0);
    expect(gatewayCalls(text) - gatewayCalls(before)).toBe(3);
    expect(delta("toolgate_errors_total", 'code="invalid_api_key"')).toBe(1);
    expect(text).toMatch(/toolgate_credits_debited_total \d+/);
    expect(text).toContain("toolgate_http_request_duration_seconds_bucket");
    expect(text).toContain('toolgate_worker_calls_in_flight{pool="general"}');
    expect(text).toContain('toolgate_queue_depth{queue="webhooks-delayed"}');
    expect(text).not.toContain(key);
  });
});

describe("GET /metrics: the process's own cost", () => {
  it("reports CPU, resident memory, heap, event-loop lag and garbage collection under toolgate_", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const before = (await metrics()).text;
    for (let i = 0; i < 30; i++)
      await callTool(gw.url, key, "hash", { text: "x".repeat(10_000) + i });
    // Garbage enough for the young generation to be collected at least once.
    let keep = 0;
    for (let i = 0; i < 200_000; i++) keep += JSON.stringify({ i, pad: "y".repeat(64) }).length;
    expect(keep).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 50));
    const { text } = await metrics();
    const value = (t: string, name: string) =>
      Number(
        t
          .split("\n")
          .find((l) => l.startsWith(`${name} `))
          ?.split(" ")[1] ?? NaN,
      );
    expect(value(text, "toolgate_process_cpu_seconds_total")).toBeGreaterThan(
      value(before, "toolgate_process_cpu_seconds_total"),
    );
    expect(value(text, "toolgate_process_resident_memory_bytes")).toBeGreaterThan(10 * 2 ** 20);
    expect(value(text, "toolgate_nodejs_heap_size_used_bytes")).toBeGreaterThan(2 ** 20);
    expect(value(text, "toolgate_nodejs_eventloop_lag_p99_seconds")).toBeGreaterThanOrEqual(0);
    const gcs = text
      .split("\n")
      .filter((l) => l.startsWith("toolgate_nodejs_gc_duration_seconds_count{"))
      .reduce((n, l) => n + Number(l.split(" ").at(-1)), 0);
    expect(gcs).toBeGreaterThan(0);
    expect(value(text, "toolgate_process_pid")).toBe(process.pid);
  });
});

describe("abuse", () => {
  it("cuts off a client that trickles its request, and others are served meanwhile", async () => {
    const { port } = new URL(gw.url);
    const socket = connect(Number(port), "127.0.0.1");
    const closed = new Promise<number>((resolve) => {
      const started = Date.now();
      socket.on("close", () => resolve(Date.now() - started));
      socket.on("error", () => undefined);
    });
    socket.write("POST /v1/tools/hash HTTP/1.1\r\nHost: x\r\n");
    const trickle = setInterval(() => socket.writable && socket.write("X-Slow: 1\r\n"), 200);
    const { key } = await fundedAccount(gw.url, 100, "pro");
    expect((await callTool(gw.url, key, "hash", { text: "meanwhile" })).status).toBe(200);
    const lasted = await closed;
    clearInterval(trickle);
    expect(lasted).toBeLessThan(5000);
  });

  it("refuses huge bodies with 413 and keeps serving", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const huge = "x".repeat(5 * 1024 * 1024);
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        call(`${gw.url}/v1/tools/hash`, { key, rawBody: `{"text":"${huge}"}` }),
      ),
    );
    expect(results.map((r) => [r.status, r.body?.error?.code])).toEqual(
      Array(5).fill([413, "body_too_large"]),
    );
    expect((await callTool(gw.url, key, "hash", { text: "ok" })).status).toBe(200);
    expect((await call(`${gw.url}/api/v1/account`, { key })).body.credits).toBe(99);
  });

  it("answers a flood of bad keys with 401 quickly, without touching the store, while a real caller is served", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const started = Date.now();
    const flood = Promise.all(
      Array.from({ length: 500 }, (_, i) =>
        callTool(gw.url, `garbage-${i}`, "hash", { text: "x" }),
      ),
    );
    const real = await callTool(gw.url, key, "hash", { text: "real" });
    const answers = await flood;
    expect(real.status).toBe(200);
    expect([...new Set(answers.map((r) => `${r.status} ${r.body?.error?.code}`))]).toEqual([
      "401 invalid_api_key",
    ]);
    expect(answers.every((r) => r.status === 401 && r.body.error.code === "invalid_api_key")).toBe(
      true,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
