import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fundedAccount, spawnGateway, type GatewayProcess } from "../helpers/gateway.js";
import { startPrivateRedis } from "../helpers/redis-server.js";

/**
 * The request path in the gateway's error lines holds no key, however a client percent-encoded
 * it: the lines written when a request fails (the 5xx warning, the "request failed" error, the
 * request guard's uncaught-exception line) write the path as the request log does. A real gateway
 * process on a Redis of the test's own (killed for the 5xx), with a fault loaded that throws
 * while serving a request marked for it (test/helpers/faults/throw-while-serving.mjs).
 */
const fault = new URL("../helpers/faults/throw-while-serving.mjs", import.meta.url).pathname;

let redis: Awaited<ReturnType<typeof startPrivateRedis>>;
let gw: GatewayProcess;
let key: string;
beforeAll(async () => {
  redis = await startPrivateRedis({ durable: false });
  gw = await spawnGateway("path-logs:", { REDIS_URL: redis.url }, ["--import", fault]);
  ({ key } = await fundedAccount(gw.url, 100, "pro"));
}, 90_000);
afterAll(async () => {
  await gw?.stop();
  await redis?.stop();
});

/** `text` with every character percent-escaped (ASCII only). */
const escapedEach = (text: string) =>
  [...text].map((c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).join("");

/** The ways a client may put the account's key in a path (`GET /v1/tools/<key>`, by mistake). */
const inPath: [string, (key: string) => string][] = [
  ["as it is", (k) => k],
  ["with its underscores escaped (tg%5Flive%5F…)", (k) => k.replace(/_/g, "%5F")],
  ["with its underscores escaped in lower case", (k) => k.replace(/_/g, "%5f")],
  ["with every character escaped", escapedEach],
];

/** The key's secret (the part after its account id), in every form it could be written in. */
function leaks(line: string): string[] {
  const secret = key.slice(key.lastIndexOf("_") + 1);
  const lower = line.toLowerCase();
  return [key, secret, escapedEach(secret), key.replace(/_/g, "%5F")].filter((form) =>
    lower.includes(form.toLowerCase()),
  );
}

/** The lines (as written) the process logged for request `id`, once one of them says `msg`. */
async function linesOf(id: string | null, msg: string): Promise<string[]> {
  expect(id).toBeTruthy();
  for (let waited = 0; waited < 15_000; waited += 100) {
    const lines = gw.output.filter((l) => l.includes(`"request_id":"${id}"`));
    if (lines.some((l) => (JSON.parse(l) as { msg: string }).msg === msg)) return lines;
    await new Promise((r) => setTimeout(r, 100)); // log lines are written in batches
  }
  throw new Error(`no "${msg}" line for request ${id}`);
}

function lineSaying(lines: string[], msg: string): Record<string, unknown> {
  const line = lines
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .find((l) => l.msg === msg);
  expect(line, msg).toBeDefined();
  return line!;
}

describe("an exception nobody caught while serving a request whose path holds a key", () => {
  const MSG =
    "uncaught exception while serving a request: that request failed, the process goes on";

  it.each(inPath)("the guard's line holds no key: %s", async (_, form) => {
    const res = await fetch(`${gw.url}/v1/tools/${form(key)}`, {
      headers: { "x-test-fault": "uncaught" },
    });
    await res.arrayBuffer();
    const lines = await linesOf(res.headers.get("x-request-id"), MSG);
    expect(leaks(lines.join("\n"))).toEqual([]);
    expect(lineSaying(lines, MSG).path).toBe("/v1/tools/tg_live_[redacted]");
  });
});

describe("an exception a route raised while serving a request whose path holds a key", () => {
  it.each(inPath)("the 500's error line holds no key: %s", async (_, form) => {
    const res = await fetch(`${gw.url}/v1/tools/${form(key)}`, {
      headers: { "x-test-fault": "route" },
    });
    const body = (await res.json()) as { error: { code: string; request_id: string } };
    expect([res.status, body.error.code]).toEqual([500, "internal_error"]);
    const lines = await linesOf(body.error.request_id, "request failed");
    expect(leaks(lines.join("\n"))).toEqual([]);
    expect(lineSaying(lines, "request failed").path).toBe("/v1/tools/tg_live_[redacted]");
  });
});

describe("a 5xx the gateway answers on purpose (its store away) for a path that holds a key", () => {
  // Last in this file: the gateway's Redis stays down from here on.
  beforeAll(() => redis.kill());

  it.each(inPath)("the warning naming its code holds no key: %s", async (_, form) => {
    const res = await fetch(`${gw.url}/v1/tools/${form(key)}`, { headers: { "x-api-key": key } });
    const body = (await res.json()) as { error: { code: string; request_id: string } };
    expect([res.status, body.error.code]).toEqual([503, "store_unavailable"]);
    const lines = await linesOf(body.error.request_id, "request");
    expect(leaks(lines.join("\n"))).toEqual([]);
    const warning = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.level === 40 && l.code === "store_unavailable");
    expect(warning).toBeDefined();
    expect(warning!.path).toBe("/v1/tools/tg_live_[redacted]");
  });
});
