import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ADMIN_KEY,
  balanceOf,
  call,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";

/**
 * Requests whose credentials are refused (an API key made up, wrong, revoked or expired; the admin
 * key; the metrics token; a dashboard session cookie naming no live session) are counted per client address (`refused-credentials` in
 * ENDPOINT_LIMITS): past the limit, every request from that address that carries a key or an
 * Authorization header is 429 before it is read, on the keyed lane and on express's routes alike.
 * Good credentials cost nothing and count nothing.
 */
let gw: TestGateway;
let key: string;
let accountId: string;
beforeAll(async () => {
  gw = await startGateway({
    env: {
      ENDPOINT_LIMITS: "refused-credentials=3/60",
      METRICS_TOKEN: "metrics-secret-0123456789",
    },
  });
  ({ key, accountId } = await fundedAccount(gw.url, 100));
});
afterAll(() => gw?.stop());

const from = (address: string) => ({ "x-forwarded-for": address });
/** A well-formed key naming the real account, with a secret that is none of its keys'. */
const wrongKeyFor = (k: string) => k.replace(/_[^_]+$/, `_${"A".repeat(32)}`);
/** A well-formed key of an account that does not exist. */
const unknownAccountKey = `tg_live_${"0".repeat(16)}_${"A".repeat(32)}`;
/** The keyed lane takes `application/json` exactly; express takes the rest (tools/routes/keyed-lane.ts). */
const onLane = (k: string, address: string) =>
  call(`${gw.url}/v1/tools/hash`, { key: k, body: { text: "a" }, headers: from(address) });
const onExpress = (k: string, address: string) =>
  call(`${gw.url}/v1/tools/hash`, {
    key: k,
    rawBody: JSON.stringify({ text: "a" }),
    headers: { ...from(address), "content-type": "application/json; charset=utf-8" },
  });

describe("refused credentials", () => {
  it("are limited per client address across doors; past the limit even a good key from there is 429, and is neither read nor charged", async () => {
    const address = "198.51.100.80";
    const refusals = [
      () => onLane(wrongKeyFor(key), address),
      () => call(`${gw.url}/api/v1/account`, { key: unknownAccountKey, headers: from(address) }),
      () =>
        call(`${gw.url}/api/v1/admin/accounts/${accountId}/workers`, {
          key: "not-the-admin-key",
          headers: from(address),
        }),
    ];
    for (const refusal of refusals) {
      const answer = await refusal();
      expect([answer.status, answer.body.error.code]).toEqual([401, "invalid_api_key"]);
    }
    const before = await balanceOf(gw.url, key);
    for (const blocked of [onLane(key, address), onExpress(key, address)]) {
      const answer = await blocked;
      expect([answer.status, answer.body.error.code]).toEqual([429, "rate_limited"]);
      expect(answer.body.error.message).toMatch(
        /^At most 3 requests with refused credentials per minute per client address/,
      );
      expect(Number(answer.headers.get("retry-after"))).toBeGreaterThan(50);
      // Refused before the key was read: the window shown is the refused credentials' (3 a
      // minute, spent), not the account's, and nothing is charged.
      expect(answer.headers.get("ratelimit-policy")).toBe("3;w=60");
      expect(answer.headers.get("ratelimit-remaining")).toBe("0");
    }
    const mcp = await call(`${gw.url}/mcp`, {
      key,
      body: { jsonrpc: "2.0", id: 1, method: "ping" },
      headers: { ...from(address), accept: "application/json, text/event-stream" },
    });
    expect(mcp.status).toBe(429);
    expect(await balanceOf(gw.url, key)).toBe(before);
    // The same key from another address is served; requests without a key from the held one too.
    expect((await onLane(key, "198.51.100.81")).status).toBe(200);
    expect((await call(`${gw.url}/v1/tools`, { headers: from(address) })).status).toBe(200);
  });

  it("count revoked keys; good keys, and keys not even well-formed (refused before any store work), count nothing", async () => {
    const good = "198.51.100.90";
    for (let i = 0; i < 8; i++) expect((await onExpress(key, good)).status).toBe(200);
    for (let i = 0; i < 8; i++) {
      const answer = await onLane(`garbage-${i}`, good);
      expect([answer.status, answer.body.error.code]).toEqual([401, "invalid_api_key"]);
    }
    expect((await onLane(key, good)).status).toBe(200);

    const { key: revoked, keyId } = await fundedAccount(gw.url, 100);
    const created = await call(`${gw.url}/api/v1/keys`, { key: revoked, body: { name: "next" } });
    expect(created.status).toBe(201);
    expect(
      (await call(`${gw.url}/api/v1/keys/${keyId}`, { key: revoked, method: "DELETE" })).status,
    ).toBe(200);
    const address = "198.51.100.91";
    for (let i = 0; i < 3; i++) {
      const answer = await onLane(revoked, address);
      expect([answer.status, answer.body.error.code]).toEqual([401, "api_key_revoked"]);
    }
    const held = await onLane(created.body.key, address);
    expect([held.status, held.body.error.code]).toEqual([429, "rate_limited"]);
  });

  it("hold the metrics token's guessing too: past the limit even the right token waits", async () => {
    const address = "198.51.100.97";
    const metrics = (token: string) =>
      call(`${gw.url}/metrics`, {
        headers: { ...from(address), authorization: `Bearer ${token}` },
      });
    for (let i = 0; i < 3; i++)
      expect((await metrics(`guess-${i}`)).body.error.code).toBe("metrics_token_required");
    const held = await metrics("metrics-secret-0123456789");
    expect([held.status, held.body.error.code]).toEqual([429, "rate_limited"]);
    const elsewhere = await call(`${gw.url}/metrics`, {
      headers: { ...from("198.51.100.98"), authorization: "Bearer metrics-secret-0123456789" },
    });
    expect(elsewhere.status).toBe(200);
  });

  it("count a session cookie that names no live session, once per browser: it is cleared", async () => {
    const address = "198.51.100.99";
    // Well-formed (an account id and a 43-character secret), naming no session.
    const cookie = `tg_session=${accountId}.${"s".repeat(43)}`;
    const page = await fetch(`${gw.url}/dashboard`, {
      headers: { ...from(address), cookie },
      redirect: "manual",
    });
    expect(page.status).toBe(303);
    // Cleared, so a browser sends it no more and is counted once.
    expect(page.headers.get("set-cookie")).toMatch(/^tg_session=;.*Max-Age=0/);
    // A script that keeps sending it is counted each time, then held.
    for (let i = 0; i < 2; i++) {
      const answer = await call(`${gw.url}/dashboard/api/v1/account`, {
        headers: { ...from(address), cookie },
      });
      expect([answer.status, answer.body.error.code]).toEqual([401, "session_required"]);
    }
    const held = await fetch(`${gw.url}/dashboard`, {
      headers: { ...from(address), cookie },
      redirect: "manual",
    });
    expect(held.status).toBe(429);
    expect((await onLane(key, address)).status).toBe(429);
    // Without credentials that address is served: the sign-in page, the catalogue.
    expect((await fetch(`${gw.url}/dashboard/sign-in`, { headers: from(address) })).status).toBe(
      200,
    );
  });

  it("hold the admin key's guessing too", async () => {
    const address = "198.51.100.95";
    for (let i = 0; i < 3; i++)
      expect(
        (
          await call(`${gw.url}/api/v1/admin/accounts/${accountId}/workers`, {
            key: `tg_admin_${"y".repeat(32)}`,
            headers: from(address),
          })
        ).status,
      ).toBe(401);
    const held = await call(`${gw.url}/api/v1/admin/accounts/${accountId}/workers`, {
      key: ADMIN_KEY,
      headers: from(address),
    });
    expect([held.status, held.body.error.code]).toEqual([429, "rate_limited"]);
  });
});
