import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  callTool,
  dropPrefix,
  fundedAccount,
  spawnGateway,
  uniquePrefix,
  type GatewayProcess,
} from "../helpers/gateway.js";
import { freePort } from "../helpers/redis-server.js";

/**
 * What an operator reads in the log when the gateway answers 5xx: a state it chose to answer (its
 * workers unreachable here) is one warning naming the code, without a stack; the error level is
 * left for bugs. A real gateway process whose workers are not listening.
 */
const prefix = uniquePrefix("errlogs");
let gateway: GatewayProcess;

beforeAll(async () => {
  gateway = await spawnGateway(prefix, { WORKERS_URL: `http://127.0.0.1:${await freePort()}` });
}, 90_000);

afterAll(async () => {
  await gateway?.stop();
  await dropPrefix(prefix);
});

describe("a 5xx the gateway answers on purpose", () => {
  it("is logged once as a warning naming its code, without a stack", async () => {
    const { key } = await fundedAccount(gateway.url, 100, "pro");
    const res = await callTool(gateway.url, key, "hash", { text: "x" });
    expect(res.status).toBeGreaterThanOrEqual(500);
    const id = res.headers.get("x-request-id");
    await new Promise((r) => setTimeout(r, 1500)); // log lines are written in batches
    const lines = gateway.output
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.request_id === id && l.msg !== "request");
    expect(lines).toEqual([
      expect.objectContaining({ level: 40, code: res.body.error.code, status: res.status }),
    ]);
    expect(JSON.stringify(lines[0])).not.toContain("stack");
  }, 60_000);
});
