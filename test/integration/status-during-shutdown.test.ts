import { Redis } from "ioredis";
import { afterAll, expect, it } from "vitest";
import { startFakeLlm } from "../helpers/fake-providers.js";
import {
  admin,
  callTool,
  dropPrefix,
  signUp,
  spawnGateway,
  uniquePrefix,
} from "../helpers/gateway.js";
import { REDIS_URL } from "../helpers/redis.js";

/**
 * A rolling restart is no outage: a process stopping while a call is in flight drains it with its
 * listener closed, and its status checks (which probe that listener) must not write what they
 * find into the uptime every process shares.
 */
const INTERVAL_MS = 200;
const prefix = uniquePrefix("status-shutdown");
afterAll(() => dropPrefix(prefix));

/** Every `{status}:day:*` count the processes under the prefix recorded: component -> ok/total. */
async function dayCounts(): Promise<Map<string, { ok: number; total: number }>> {
  const redis = new Redis(REDIS_URL);
  try {
    const counts = new Map<string, { ok: number; total: number }>();
    // Every day's key: the test may run across midnight UTC.
    for (const key of await redis.keys(`${prefix}{status}:day:*`)) {
      for (const [field, value] of Object.entries(await redis.hgetall(key))) {
        const [component, kind] = field.split("|") as [string, "ok" | "total"];
        const entry = counts.get(component) ?? { ok: 0, total: 0 };
        entry[kind] += Number(value);
        counts.set(component, entry);
      }
    }
    return counts;
  } finally {
    redis.disconnect();
  }
}

it("a process stopping with a call in flight records no failed status round during its drain", async () => {
  const llm = await startFakeLlm();
  llm.state.delayMs = 3000;
  const gw = await spawnGateway(prefix, {
    AI_BASE_URL: `${llm.url}/v1`,
    AI_MODEL: "m",
    STATUS_CHECK_INTERVAL_MS: String(INTERVAL_MS),
  });
  try {
    const { key, accountId } = await signUp(gw.url);
    await admin(gw.url, `/accounts/${accountId}/tier`, { method: "PUT", body: { tier: "pro" } });
    // A few rounds while it serves: all operational.
    await new Promise((r) => setTimeout(r, INTERVAL_MS * 4));
    const inFlight = callTool(gw.url, key, "ai-generate", { prompt: "slow" });
    await llm.reached(1);
    const exited = gw.stop("SIGTERM");
    // The drain lasts as long as the call (seconds: many check intervals).
    expect((await inFlight).status).toBe(200);
    expect(await exited).toBe(0);

    const counts = await dayCounts();
    for (const component of ["rest-api", "mcp"])
      expect(counts.get(component)?.total, component).toBeGreaterThan(0);
    const failed = [...counts].filter(([, c]) => c.ok !== c.total);
    expect(failed).toEqual([]);
  } finally {
    await gw.stop("SIGKILL");
    await llm.stop();
  }
}, 60_000);
