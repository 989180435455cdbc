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
    // Log lines are written in batches (at least once a second, later on a loaded machine): read
    // once the first has arrived, and a batch later, so a second line would show as well.
    const linesOf = () =>
      gateway.output
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((l) => l.request_id === id && l.msg !== "request");
    for (const deadline = Date.now() + 10_000; linesOf().length === 0 && Date.now() < deadline; )
      await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 1500));
    const lines = linesOf();
    expect(lines).toEqual([
      expect.objectContaining({ level: 40, code: res.body.error.code, status: res.status }),
    ]);
    expect(JSON.stringify(lines[0])).not.toContain("stack");
  }, 60_000);
});

describe("the request log's account", () => {
  /** The request log line of the answer `res`, once written (lines are written in batches). */
  async function requestLine(res: { headers: Headers }) {
    const id = res.headers.get("x-request-id");
    for (let waited = 0; waited < 5000; waited += 100) {
      const line = gateway.output
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l.request_id === id && l.msg === "request");
      if (line) return line;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`no request line for ${id}`);
  }

  it("is the key's account only when the key is one of its keys: a made-up key naming another account's id is logged as no account's", async () => {
    const { accountId, key } = await fundedAccount(gateway.url, 100, "pro");
    const forged = `${key.slice(0, -32)}${"A".repeat(32)}`;
    const [real, made] = [
      await callTool(gateway.url, key, "hash", { text: "x" }),
      await callTool(gateway.url, forged, "hash", { text: "x" }),
    ];
    expect(made.body.error.code).toBe("invalid_api_key");
    expect((await requestLine(real)).account_id).toBe(accountId);
    expect(await requestLine(made)).not.toHaveProperty("account_id");
  }, 60_000);
});
