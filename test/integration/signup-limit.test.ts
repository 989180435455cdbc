import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomId } from "../../src/lib/ids.js";
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
 * The sign-up limit counts sign-ups that create an account, per client address — an address the
 * client cannot choose: X-Forwarded-For is believed only from a proxy named in TRUST_PROXY.
 */
const email = () => `limit-${randomId(10)}@example.com`;

describe("a gateway with the default TRUST_PROXY (no proxy trusted)", () => {
  const prefix = uniquePrefix("noproxy");
  let gw: GatewayProcess;
  beforeAll(async () => {
    gw = await spawnGateway(prefix, { TRUST_PROXY: undefined, SIGNUPS_PER_HOUR_PER_IP: "3" });
  });
  afterAll(async () => {
    await gw?.stop();
    await dropPrefix(prefix);
  });

  it("ignores X-Forwarded-For from its peer: a client rotating it is still limited", async () => {
    const statuses = [];
    for (let i = 0; i < 4; i++)
      statuses.push(
        (
          await call(`${gw.url}/api/v1/signup`, {
            body: { email: email() },
            headers: { "x-forwarded-for": `203.0.113.${i + 1}` },
          })
        ).status,
      );
    expect(statuses).toEqual([201, 201, 201, 429]);
  });
});

describe("a gateway behind a trusted proxy (TRUST_PROXY=loopback)", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      env: { SIGNUPS_PER_HOUR_PER_IP: "2", ENDPOINT_LIMITS: "signup-refused=6/3600" },
    });
  });
  afterAll(() => gw?.stop());

  const signup = (address: string, body = { email: email() }, claimed = "") =>
    call(`${gw.url}/api/v1/signup`, {
      body,
      headers: { "x-forwarded-for": claimed ? `${claimed}, ${address}` : address },
    });

  it("limits by the address the proxy saw, whatever the client put before it", async () => {
    const statuses = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await signup("198.51.100.20", undefined, `10.1.1.${i}`)).status);
    expect(statuses).toEqual([201, 201, 429]);
  });

  it("counts only sign-ups that create an account, and names the setting in its 429 outside production", async () => {
    const address = "198.51.100.21";
    const taken = { email: email() };
    expect((await signup(address, taken)).status).toBe(201);
    for (let i = 0; i < 5; i++)
      expect((await signup(address, taken)).body.error.code).toBe("email_taken");
    expect((await signup(address)).status).toBe(201);
    const refused = await signup(address);
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({
      code: "rate_limited",
      message: "At most 2 sign-ups per hour from one address (SIGNUPS_PER_HOUR_PER_IP).",
    });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("limits sign-ups refused as email_taken per address: past it every sign-up from there is 429, taken address or not", async () => {
    const address = "198.51.100.22";
    const taken = { email: email() };
    expect((await signup(address, taken)).status).toBe(201);
    const answers = [];
    for (let i = 0; i < 7; i++) answers.push((await signup(address, taken)).body.error.code);
    expect(answers).toEqual([...Array(6).fill("email_taken"), "rate_limited"]);
    // A free address from there is refused alike: the 429 says nothing of who has an account…
    const fresh = await signup(address);
    expect(fresh.status).toBe(429);
    expect(fresh.body.error.message).toBe(
      "At most 6 sign-ups refused for an address that has an account per hour per client address (ENDPOINT_LIMITS signup-refused=6/3600).",
    );
    // …and the limit is the address's alone: another address is still told 409.
    expect((await signup("198.51.100.23", taken)).body.error.code).toBe("email_taken");
  });
});

describe("an IPv6 client, behind a trusted proxy", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({
      env: { SIGNUPS_PER_HOUR_PER_IP: "5", ENDPOINT_LIMITS: "signup-refused=6/3600" },
    });
  });
  afterAll(() => gw?.stop());

  const signup = (address: string, body = { email: email() }) =>
    call(`${gw.url}/api/v1/signup`, { body, headers: { "x-forwarded-for": address } });

  it("is counted by its /64: its addresses share one limit, another /64 has its own", async () => {
    const statuses = [];
    for (let i = 1; i <= 6; i++) statuses.push((await signup(`2001:db8:a:1::${i}`)).status);
    expect(statuses).toEqual([201, 201, 201, 201, 201, 429]);
    expect((await signup("2001:db8:a:1:ffff:ffff:ffff:ffff")).status).toBe(429);
    expect((await signup("2001:db8:a:2::1")).status).toBe(201);
  });

  it("is counted by its /64 for sign-ups refused as email_taken too", async () => {
    const taken = { email: email() };
    expect((await signup("2001:db8:b:1::1", taken)).status).toBe(201);
    const answers = [];
    for (let i = 2; i <= 8; i++)
      answers.push((await signup(`2001:db8:b:1::${i}`, taken)).body.error.code);
    expect(answers).toEqual([...Array(6).fill("email_taken"), "rate_limited"]);
    expect((await signup("2001:db8:b:2::1", taken)).body.error.code).toBe("email_taken");
  });

  it("is the IPv4 client it maps, when its address is IPv4-mapped", async () => {
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await signup("198.51.100.25")).status);
    for (let i = 0; i < 3; i++) statuses.push((await signup("::ffff:198.51.100.25")).status);
    expect(statuses).toEqual([201, 201, 201, 201, 201, 429]);
  });
});
