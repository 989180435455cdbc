import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  callTool,
  dropPrefix,
  fundedAccount,
  spawnGateway,
  startGateway,
  uniquePrefix,
  type GatewayProcess,
} from "../helpers/gateway.js";

/**
 * A shared worker pool is not one account's to fill: with every heavy slot taken by one account's
 * calls that run to their limit, another account's call is still served at once. A real gateway
 * process (Redis store) with its bundled workers; the heavy pool has two slots.
 */
const prefix = uniquePrefix("fairshare");
let gateway: GatewayProcess;

beforeAll(async () => {
  gateway = await spawnGateway(prefix, {
    HEAVY_POOL_CONCURRENCY: "2",
    POOL_QUEUE_TIMEOUT_MS: "30000",
  });
}, 90_000);

afterAll(async () => {
  await gateway?.stop();
  await dropPrefix(prefix);
});

/** A sandboxed script that spins until its CPU-time limit stops it: it holds its slot that long. */
const spin = { code: "for (;;) {}", time_limit_ms: 4000 };

describe("a shared worker pool", () => {
  it("serves another account at once while one account's calls would hold every slot", async () => {
    const [hog, other] = await Promise.all([
      fundedAccount(gateway.url, 1000, "pro"),
      fundedAccount(gateway.url, 1000, "pro"),
    ]);
    const finished: string[] = [];
    const run = (name: string, key: string, input: unknown) =>
      callTool(gateway.url, key, "js-sandbox", input).then((res) => {
        finished.push(name);
        return res;
      });
    const hogCalls = [run("hog-1", hog.key, spin), run("hog-2", hog.key, spin)];
    // Both of its calls are at the gateway's gate before the other account comes.
    await new Promise((r) => setTimeout(r, 500));
    const served = await run("other", other.key, { code: "6 * 7" });
    expect(served.status).toBe(200);
    expect(served.body.result).toBe(42);
    // Served while the hog's first call still spins: it did not wait for a slot to free up.
    expect(finished).toEqual(["other"]);
    // The hog's calls are all served too, its second once its first has let go of its slot.
    const hogAnswers = await Promise.all(hogCalls);
    // (Refused as the script's fault, and so not charged: holding slots costs the hog nothing.)
    for (const res of hogAnswers) {
      expect(res.status).toBe(422);
      expect(res.body.error.message).toBe("The script ran longer than 4000 ms and was stopped.");
    }
  }, 90_000);
});

describe("the heavy pool's share with the shipped defaults", () => {
  // HEAVY_POOL_CONCURRENCY 8 at the gateway, HEAVY_THREADS 2 in the workers: half of the gateway's
  // slots (4) would be every heavy thread, and another account's call would wait in the workers'
  // own queue, past the gateway's gate, until one of them ended.
  it("is half of the workers' heavy threads, so another account's call finds a thread", async () => {
    const gw = await startGateway({ env: { POOL_QUEUE_TIMEOUT_MS: "30000" } });
    try {
      expect(gw.services.pools.gate("heavy").limit).toBe(8);
      expect(gw.services.pools.gate("heavy").share).toBe(1);
      const [hog, other] = await Promise.all([
        fundedAccount(gw.url, 1000, "pro"),
        fundedAccount(gw.url, 1000, "pro"),
      ]);
      const finished: string[] = [];
      const run = (name: string, key: string, input: unknown) =>
        callTool(gw.url, key, "js-sandbox", input).then((res) => {
          finished.push(name);
          return res;
        });
      const slow = { code: "for (;;) {}", time_limit_ms: 2000 };
      const hogCalls = [1, 2, 3, 4].map((i) => run(`hog-${i}`, hog.key, slow));
      await new Promise((r) => setTimeout(r, 500));
      const served = await run("other", other.key, { code: "6 * 7" });
      expect(served.status).toBe(200);
      expect(served.body.result).toBe(42);
      expect(finished).toEqual(["other"]);
      for (const res of await Promise.all(hogCalls)) expect(res.status).toBe(422);
    } finally {
      await gw.stop();
    }
  }, 90_000);
});
