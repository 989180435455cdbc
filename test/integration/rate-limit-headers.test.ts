import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomId } from "../../src/lib/ids.js";
import {
  call,
  callTool,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";

/**
 * D12: a 429 carries Retry-After and RateLimit-*; and every answer to a request a limiter counted
 * carries that limiter's window (RateLimit-Policy/Limit/Remaining/Reset) — a keyed tool call's
 * errors as its successes, the per-endpoint limits' answers, refused credentials' 401.
 */
let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({
    env: { ENDPOINT_LIMITS: "wallet-challenge=2/60", SIGNUPS_PER_HOUR_PER_IP: "1" },
  });
});
afterAll(() => gw?.stop());

const from = (address: string) => ({ "x-forwarded-for": address });
const windowOf = (res: { headers: Headers }) => ({
  policy: res.headers.get("ratelimit-policy"),
  limit: res.headers.get("ratelimit-limit"),
  remaining: res.headers.get("ratelimit-remaining"),
  reset: res.headers.get("ratelimit-reset") === null ? null : "set",
});
const window = (policy: string, remaining: number) => ({
  policy,
  limit: policy.split(";")[0],
  remaining: String(remaining),
  reset: "set",
});

describe("RateLimit headers", () => {
  it("are on every answer of a keyed tool call the tier counted: 422, 404, 503 and 200 alike", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    const answers = [
      [422, await callTool(gw.url, key, "hash", { nonsense: true })],
      [422, await callTool(gw.url, key, "hash", { text: "a" }, { "idempotency-key": "\u00e9" })],
      [404, await callTool(gw.url, key, "no-such-tool", { text: "a" })],
      // No AI provider configured: the tool cannot run.
      [503, await callTool(gw.url, key, "ai-generate", { prompt: "hi" })],
      [200, await callTool(gw.url, key, "hash", { text: "a" })],
    ] as const;
    const first = Number(answers[0][1].headers.get("ratelimit-remaining"));
    for (const [i, [status, res]] of answers.entries()) {
      expect([i, res.status]).toEqual([i, status]);
      expect([i, windowOf(res)]).toEqual([i, window("1000;w=60", first - i)]);
    }
  });

  it("are on a refused key's 401: the refused credentials' window", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    // Well-formed, naming a real account, and wrong: a store lookup refused it.
    const wrong = `${key.slice(0, -1)}${key.endsWith("a") ? "b" : "a"}`;
    const res = await callTool(gw.url, wrong, "hash", { text: "a" }, from("198.51.100.120"));
    expect([res.status, res.body.error.code]).toEqual([401, "invalid_api_key"]);
    expect(windowOf(res)).toEqual(window("60;w=60", 59));
  });

  it("are on the per-endpoint limits' answers and 429s (wallet challenge), with Retry-After", async () => {
    const challenge = () =>
      call(`${gw.url}/api/v1/wallet/challenge`, {
        body: { address: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" },
        headers: from("198.51.100.121"),
      });
    for (let i = 0; i < 2; i++) {
      const res = await challenge();
      expect(res.status).toBe(200);
      // The nearer of the two windows that counted it (the endpoint's 2, the address's 600).
      expect(windowOf(res)).toEqual(window("2;w=60", 1 - i));
    }
    const refused = await challenge();
    expect([refused.status, refused.body.error.code]).toEqual([429, "rate_limited"]);
    expect(windowOf(refused)).toEqual(window("2;w=60", 0));
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("are on sign-up's answers and its 429", async () => {
    const signup = () =>
      call(`${gw.url}/api/v1/signup`, {
        body: { email: `headers-${randomId(8)}@example.com` },
        headers: from("198.51.100.122"),
      });
    const created = await signup();
    expect(created.status).toBe(201);
    expect(windowOf(created)).toEqual(window("1;w=3600", 0));
    const refused = await signup();
    expect(refused.status).toBe(429);
    expect(windowOf(refused)).toEqual(window("1;w=3600", 0));
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("are documented on every 429 of the OpenAPI document, with Retry-After", async () => {
    const doc = (await call(`${gw.url}/openapi.json`)).body;
    let seen = 0;
    for (const [path, operations] of Object.entries<any>(doc.paths))
      for (const [method, operation] of Object.entries<any>(operations)) {
        const tooMany = operation.responses?.["429"];
        if (!tooMany) continue;
        seen++;
        expect([path, method, Object.keys(tooMany.headers ?? {}).sort()]).toEqual([
          path,
          method,
          expect.arrayContaining([
            "Retry-After",
            "RateLimit-Limit",
            "RateLimit-Policy",
            "RateLimit-Remaining",
            "RateLimit-Reset",
          ]),
        ]);
      }
    expect(seen).toBeGreaterThan(50);
    // The public pages are counted (per address) too: their 429 is documented.
    expect(doc.paths["/status.json"].get.responses["429"]).toBeDefined();
  });
});
