import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";

/**
 * Requests without credentials (pages, documents, the catalogue, probes, keyless calls and MCP)
 * are counted per client address (`anonymous` in ENDPOINT_LIMITS); keyed ones are not.
 */
let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ env: { ENDPOINT_LIMITS: "anonymous=6/60" } });
});
afterAll(() => gw?.stop());

const from = (address: string) => ({ "x-forwarded-for": address });

describe("requests without credentials", () => {
  it("are limited per client address, whichever door they knock on; keyed requests from the same address are not counted", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    const anonymous = [
      () => call(`${gw.url}/v1/tools`, { headers: from("198.51.100.70") }),
      () => call(`${gw.url}/status.json`, { headers: from("198.51.100.70") }),
      () => call(`${gw.url}/readyz`, { headers: from("198.51.100.70") }),
      () =>
        call(`${gw.url}/v1/tools/hash`, { body: { text: "a" }, headers: from("198.51.100.70") }),
      () =>
        call(`${gw.url}/mcp`, {
          body: { jsonrpc: "2.0", id: 1, method: "ping" },
          headers: { ...from("198.51.100.70"), accept: "application/json, text/event-stream" },
        }),
      () => call(`${gw.url}/openapi.json`, { headers: from("198.51.100.70") }),
    ];
    for (const [i, request] of anonymous.entries()) {
      expect([i, (await request()).status]).not.toEqual([i, 429]);
      // Interleaved keyed requests from the same address count against the account's tier only.
      const keyed = await call(`${gw.url}/api/v1/account`, { key, headers: from("198.51.100.70") });
      expect(keyed.status).toBe(200);
    }
    const refused = await call(`${gw.url}/healthz`, { headers: from("198.51.100.70") });
    expect([refused.status, refused.body.error?.code]).toEqual([429, "rate_limited"]);
    expect(refused.body.error.message).toMatch(
      /^At most 6 requests without credentials per minute per client address/,
    );
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    // Another address is not held by the first one's use.
    expect((await call(`${gw.url}/v1/tools`, { headers: from("198.51.100.71") })).status).toBe(200);
  });
});
