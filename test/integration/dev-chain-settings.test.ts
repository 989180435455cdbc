import { afterAll, describe, expect, it } from "vitest";
import {
  call,
  dropPrefix,
  spawnGateway,
  startGateway,
  uniquePrefix,
  type GatewayProcess,
  type TestGateway,
} from "../helpers/gateway.js";

/**
 * In development with no X402_NETWORKS the gateway starts a local chain: only the network, the
 * payee and the relayer come from that chain; every X402_* tuning variable is the operator's, with
 * one process and with several. The offer's `maxTimeoutSeconds` (X402_MAX_TIMEOUT_SECONDS) is the
 * tuning a caller can see.
 */
const running: (TestGateway | GatewayProcess)[] = [];
const prefixes: string[] = [];
afterAll(async () => {
  await Promise.all(running.map((g) => g.stop()));
  await Promise.all(prefixes.map(dropPrefix));
});

async function offeredTimeout(url: string): Promise<unknown[]> {
  const res = await call(`${url}/v1/tools/hash`, { body: { text: "hi" } });
  expect(res.status).toBe(402);
  return res.body.accepts.map((a: { maxTimeoutSeconds: number }) => a.maxTimeoutSeconds);
}

const development = { NODE_ENV: "development", DEV_SEED: "0", X402_MAX_TIMEOUT_SECONDS: "120" };

describe("the development chain", () => {
  it("takes the X402_* tuning from the environment in one process", async () => {
    const gw = await startGateway({ env: development });
    running.push(gw);
    expect(await offeredTimeout(gw.url)).toEqual([120]);
  }, 60_000);

  it("takes the X402_* tuning from the environment with WEB_CONCURRENCY=2", async () => {
    const prefix = uniquePrefix("devchain");
    prefixes.push(prefix);
    const gw = await spawnGateway(prefix, { ...development, WEB_CONCURRENCY: "2" });
    running.push(gw);
    expect(await offeredTimeout(gw.url)).toEqual([120]);
  }, 120_000);
});
