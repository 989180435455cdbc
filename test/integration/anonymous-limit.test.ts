import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";

/**
 * Requests without credentials (pages, documents, the catalogue, keyless calls and MCP) are
 * counted per client address (`anonymous` in ENDPOINT_LIMITS); keyed ones are not. The operator's
 * probes have a limit of their own (operator-probes.test.ts).
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
      () => call(`${gw.url}/llms.txt`, { headers: from("198.51.100.70") }),
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
    const refused = await call(`${gw.url}/v1/tools/categories`, {
      headers: from("198.51.100.70"),
    });
    expect([refused.status, refused.body.error?.code]).toEqual([429, "rate_limited"]);
    expect(refused.body.error.message).toMatch(
      /^At most 6 requests without credentials per minute per client address/,
    );
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    // Another address is not held by the first one's use.
    expect((await call(`${gw.url}/v1/tools`, { headers: from("198.51.100.71") })).status).toBe(200);
  });
});

describe("a person's browser past the limit", () => {
  it("is shown a page saying so when it opens a page or sends a sign-in form; a script still gets the JSON", async () => {
    const address = "198.51.100.72";
    for (let i = 0; i < 6; i++)
      expect((await call(`${gw.url}/v1/tools`, { headers: from(address) })).status).toBe(200);
    const browser = {
      ...from(address),
      accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    };
    const opened = [
      await fetch(`${gw.url}/dashboard/sign-in`, { headers: browser }),
      await fetch(`${gw.url}/api/v1/verify-email?token=x`, { headers: browser }),
      await fetch(`${gw.url}/dashboard/sign-in/email`, {
        method: "POST",
        headers: {
          ...browser,
          "content-type": "application/x-www-form-urlencoded",
          origin: gw.url,
          "sec-fetch-site": "same-origin",
        },
        body: "email=someone%40example.com",
      }),
    ];
    for (const page of opened) {
      expect([page.status, page.headers.get("content-type")]).toEqual([
        429,
        "text/html; charset=utf-8",
      ]);
      expect(Number(page.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(page.headers.get("ratelimit-policy")).toBe("6;w=60");
      const html = await page.text();
      expect(html).toContain("Too many requests");
      expect(html).toMatch(/At most 6 requests without credentials per minute per client address/);
      expect(html).toMatch(/Try again in \d+ s\./);
    }
    // A script asking for JSON, on the same paths, keeps the one error shape.
    const script = await call(`${gw.url}/dashboard/sign-in`, { headers: from(address) });
    expect([script.status, script.body.error?.code]).toEqual([429, "rate_limited"]);
  });
});

describe("requests without credentials from IPv6 addresses", () => {
  it("count one /64 as one client, on express's routes and the keyed lane alike; another /64 is not held", async () => {
    const statuses = [];
    for (let i = 1; i <= 6; i++)
      statuses.push(
        (await call(`${gw.url}/v1/tools`, { headers: from(`2001:db8:70:1::${i}`) })).status,
      );
    expect(statuses).toEqual([200, 200, 200, 200, 200, 200]);
    const refused = await call(`${gw.url}/v1/tools/categories`, {
      headers: from("2001:db8:70:1::7"),
    });
    expect([refused.status, refused.body.error?.code]).toEqual([429, "rate_limited"]);
    // A made-up key's refusal is answered on the keyed lane, and counted there as anonymous too.
    const keyed = await call(`${gw.url}/v1/tools/hash`, {
      body: { text: "a" },
      key: "not-a-key",
      headers: from("2001:db8:70:1::8"),
    });
    expect(keyed.status).toBe(429);
    expect((await call(`${gw.url}/v1/tools`, { headers: from("2001:db8:70:2::1") })).status).toBe(
      200,
    );
  });
});

/** The anonymous window (6 a minute here) on an answer, as `remaining` says. */
function expectAnonymousWindow(res: { headers: Headers }, remaining: number) {
  expect({
    policy: res.headers.get("ratelimit-policy"),
    limit: res.headers.get("ratelimit-limit"),
    remaining: res.headers.get("ratelimit-remaining"),
  }).toEqual({ policy: "6;w=60", limit: "6", remaining: String(remaining) });
  expect(Number(res.headers.get("ratelimit-reset"))).toBeGreaterThanOrEqual(0);
}

function expectAnonymous429(res: { status: number; headers: Headers; body: any }) {
  expect([res.status, res.body.error?.code]).toEqual([429, "rate_limited"]);
  expect(res.body.error.message).toMatch(
    /^At most 6 requests without credentials per minute per client address/,
  );
  expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
  expectAnonymousWindow(res, 0);
}

describe("requests with credentials that no route admits", () => {
  // Public doors that never read a key: each answered, none of them counts a key or a payment.
  const doors = [
    (h: Record<string, string>) => call(`${gw.url}/changelog.rss`, { headers: h }),
    (h: Record<string, string>) => call(`${gw.url}/status.json`, { headers: h }),
    (h: Record<string, string>) => call(`${gw.url}/openapi.json`, { headers: h }),
    (h: Record<string, string>) => call(`${gw.url}/docs`, { headers: h }),
    // Not /v1/tools/categories: it reads a key, for the account's own tools (`custom`).
    (h: Record<string, string>) => call(`${gw.url}/changelog`, { headers: h }),
    (h: Record<string, string>) => call(`${gw.url}/llms.txt`, { headers: h }),
  ];
  const cases: [string, string, Record<string, string>][] = [
    ["a junk Authorization header", "198.51.100.80", { authorization: "Basic x" }],
    ["a junk x-api-key", "198.51.100.81", { "x-api-key": "junk" }],
    ["a junk X-PAYMENT", "198.51.100.82", { "x-payment": "junk" }],
    ["a junk PAYMENT-SIGNATURE", "198.51.100.83", { "payment-signature": "junk" }],
  ];
  for (const [what, address, headers] of cases)
    it(`are counted per client address with ${what}, on every public door`, async () => {
      for (let i = 0; i < 6; i++) {
        const res = await doors[i]!({ ...from(address), ...headers });
        expect([i, res.status]).toEqual([i, 200]);
        expectAnonymousWindow(res, 5 - i);
      }
      expectAnonymous429(
        await call(`${gw.url}/changelog.rss`, { headers: { ...from(address), ...headers } }),
      );
      // …and the same with nothing at all: one window per address, whatever was sent.
      expectAnonymous429(await call(`${gw.url}/llms.txt`, { headers: from(address) }));
    });

  it("count a keyless call's 402 offer with a junk Authorization, and a malformed key's 401 on the keyed lane", async () => {
    const address = "198.51.100.84";
    for (let i = 0; i < 3; i++) {
      const offer = await call(`${gw.url}/v1/tools/hash`, {
        body: { text: "a" },
        headers: { ...from(address), authorization: "Basic x" },
      });
      expect(offer.status).not.toBe(429);
      expectAnonymousWindow(offer, 5 - 2 * i);
      const malformed = await call(`${gw.url}/v1/tools/hash`, {
        body: { text: "a" },
        key: "junk",
        headers: from(address),
      });
      expect([malformed.status, malformed.body.error.code]).toEqual([401, "invalid_api_key"]);
      expectAnonymousWindow(malformed, 4 - 2 * i);
    }
    expectAnonymous429(
      await call(`${gw.url}/v1/tools/hash`, {
        body: { text: "a" },
        key: "junk",
        headers: from(address),
      }),
    );
    // A missing key on a keyed route, with a junk Authorization: counted too.
    expectAnonymous429(
      await call(`${gw.url}/api/v1/account`, {
        headers: { ...from(address), authorization: "Basic x" },
      }),
    );
  });

  it("count a valid key sent to a public route per address (the route does not read it), not against the account", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    const address = "198.51.100.85";
    const account = () => call(`${gw.url}/api/v1/account`, { key, headers: from("198.51.100.86") });
    const before = Number((await account()).headers.get("ratelimit-remaining"));
    for (let i = 0; i < 6; i++) {
      const res = await call(`${gw.url}/status.json`, { key, headers: from(address) });
      expect([i, res.status]).toEqual([i, 200]);
      expectAnonymousWindow(res, 5 - i);
    }
    expectAnonymous429(await call(`${gw.url}/status.json`, { key, headers: from(address) }));
    // The account's window moved by its own read alone.
    expect(Number((await account()).headers.get("ratelimit-remaining"))).toBe(before - 1);
    // Keyed calls from the spent address are the account's, and served.
    const keyed = await call(`${gw.url}/v1/tools/hash`, {
      body: { text: "a" },
      key,
      headers: from(address),
    });
    expect(keyed.status).toBe(200);
    expect(keyed.headers.get("ratelimit-policy")).toBe("1000;w=60");
  });
});

describe("the probe's repro, at the default limit", () => {
  let defaults: TestGateway;
  beforeAll(async () => {
    defaults = await startGateway();
  });
  afterAll(() => defaults?.stop());

  it("holds 1,000 GET /v1/tools/categories with Authorization: Basic x from one address to 600", async () => {
    const statuses: number[] = [];
    for (let batch = 0; batch < 20; batch++)
      statuses.push(
        ...(await Promise.all(
          Array.from({ length: 50 }, () =>
            fetch(`${defaults.url}/v1/tools/categories`, {
              headers: { ...from("198.51.100.90"), authorization: "Basic x" },
            }).then(async (r) => {
              await r.arrayBuffer();
              return r.status;
            }),
          ),
        )),
      );
    expect(statuses.filter((s) => s === 200).length).toBe(600);
    expect(statuses.filter((s) => s === 429).length).toBe(400);
  }, 60_000);
});
