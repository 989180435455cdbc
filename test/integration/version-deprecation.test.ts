import { request } from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";
import {
  balanceOf,
  call,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";

/**
 * A version marked deprecated in configuration: every answer under it carries Deprecation
 * (RFC 9745), Sunset (RFC 8594: six months after its successor shipped) and a Link to the
 * changelog; after the sunset (a fake clock) it answers 410 pointing at the successor.
 */
const VERSIONS = JSON.stringify([
  { name: "v1", prefixes: ["/v1", "/api/v1"], released: "2026-11-21", deprecated: "2026-11-22" },
  { name: "v2", prefixes: ["/v2", "/api/v2"], released: "2026-11-22" },
]);
const DEPRECATED_AT = Date.UTC(2026, 10, 22) / 1000;
const SUNSET = "Sat, 22 May 2027 00:00:00 GMT";

/**
 * The link-values of a Link header (RFC 8288): comma-separated, a comma inside the <URI> or a
 * quoted parameter not being a separator. Each with its target and its rel.
 */
function linksOf(header: string): { url: string; rel: string }[] {
  const values = header.match(/<[^>]*>(?:\s*;\s*[^=;,\s]+(?:=(?:"[^"]*"|[^;,\s]*))?)*/g) ?? [];
  return values.map((value) => ({
    url: /^<([^>]*)>/.exec(value)![1]!,
    rel: /;\s*rel="?([^";,]+)"?/.exec(value.slice(value.indexOf(">")))?.[1] ?? "",
  }));
}

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({
    store: "memory",
    env: { API_VERSIONS: VERSIONS, PUBLIC_BASE_URL: "https://api.toolgate.example/gw" },
  });
});
afterAll(() => gw.stop());
afterEach(() => vi.useRealTimers());

describe("a deprecated version before its sunset", () => {
  it("answers as usual, with Deprecation, Sunset and a Link to the changelog on every answer under it", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: new Date("2027-05-21T23:59:59Z") });
    for (const res of [
      await call(`${gw.url}/v1/tools`),
      await call(`${gw.url}/api/v1/account`),
      await call(`${gw.url}/v1/tools/nope`),
    ]) {
      expect([200, 401, 404]).toContain(res.status);
      expect(res.headers.get("deprecation")).toBe(`@${DEPRECATED_AT}`);
      expect(res.headers.get("sunset")).toBe(SUNSET);
      expect(res.headers.get("link")).toContain(
        '<https://api.toolgate.example/gw/changelog>; rel="deprecation"',
      );
      // A browser client calling from another origin can read the notice.
      const exposed = res.headers.get("access-control-expose-headers")!.split(/,\s*/);
      expect(exposed).toEqual(expect.arrayContaining(["deprecation", "sunset", "link"]));
    }
    expect((await call(`${gw.url}/v1/tools`)).headers.get("link")).toContain(
      // Absolute: behind a proxy serving the gateway under /gw, a root-relative reference would
      // resolve outside it.
      '<https://api.toolgate.example/gw/v2/tools>; rel="successor-version"',
    );
  });

  it("keeps its links beside a route's own: a CSV usage page carries deprecation, successor-version and next", async () => {
    const { key } = await fundedAccount(gw.url, 100); // two entries: the sign-up grant and the funds
    const res = await fetch(`${gw.url}/api/v1/usage?format=csv&limit=1`, {
      headers: { "x-api-key": key },
    });
    expect(res.status).toBe(200);
    const links = linksOf(res.headers.get("link") ?? "");
    expect(links.map((l) => l.rel).sort()).toEqual(["deprecation", "next", "successor-version"]);
    expect(links.find((l) => l.rel === "deprecation")!.url).toBe(
      "https://api.toolgate.example/gw/changelog",
    );
    expect(links.find((l) => l.rel === "successor-version")!.url).toBe(
      "https://api.toolgate.example/gw/api/v2/usage",
    );
  });

  it("makes a CSV page's next link absolute on PUBLIC_BASE_URL, and following it gives the next page", async () => {
    const { key } = await fundedAccount(gw.url, 100); // two entries: the sign-up grant and the funds
    const first = await fetch(`${gw.url}/api/v1/usage?format=csv&limit=1`, {
      headers: { "x-api-key": key },
    });
    const next = linksOf(first.headers.get("link") ?? "").find((l) => l.rel === "next")?.url;
    // Under the proxy's path: a root-relative /api/v1/usage would resolve outside /gw.
    expect(next).toMatch(
      /^https:\/\/api\.toolgate\.example\/gw\/api\/v1\/usage\?format=csv&limit=1&cursor=[^&]+$/,
    );
    const firstRows = (await first.text()).trim().split("\r\n");
    const followed = await fetch(
      `${gw.url}${next!.slice("https://api.toolgate.example/gw".length)}`,
      { headers: { "x-api-key": key } },
    );
    expect(followed.status).toBe(200);
    const nextRows = (await followed.text()).trim().split("\r\n");
    // The header and one entry each, and not the same entry.
    expect([firstRows.length, nextRows.length]).toEqual([2, 2]);
    expect(nextRows[1]).not.toBe(firstRows[1]);
    expect(linksOf(followed.headers.get("link") ?? "").map((l) => l.rel)).not.toContain("next");
  });

  it("marks every operation under the deprecated version deprecated in /openapi.json, and no other", async () => {
    const doc = (await call(`${gw.url}/openapi.json`)).body as {
      paths: Record<string, Record<string, { deprecated?: boolean }>>;
    };
    const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];
    const marks = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([method]) => METHODS.includes(method))
        .map(([method, op]) => ({ path, method, deprecated: op.deprecated === true })),
    );
    const versioned = (path: string) => /^\/(api\/)?v1(\/|$)/.test(path);
    expect(marks.filter((m) => versioned(m.path) && !m.deprecated)).toEqual([]);
    expect(marks.filter((m) => !versioned(m.path) && m.deprecated)).toEqual([]);
    // Both prefixes are there, and paths outside the version too.
    expect(marks.some((m) => m.path.startsWith("/v1/"))).toBe(true);
    expect(marks.some((m) => m.path.startsWith("/api/v1/"))).toBe(true);
    expect(doc.paths["/healthz"]!.get!.deprecated).toBeUndefined();
  });

  it("keeps a request path's own `>` inside the successor's link target (it cannot add links or parameters)", async () => {
    // fetch (and a URL string) would percent-encode it; a path given as written is sent as is, as
    // any client may send it.
    const link = await new Promise<string>((resolve, reject) => {
      const { hostname, port } = new URL(gw.url);
      request({ hostname, port, path: "/v1/tools/x>;rel=evil,<https:" }, (res) => {
        res.resume();
        resolve(String(res.headers.link ?? ""));
      })
        .on("error", reject)
        .end();
    });
    expect(linksOf(link).map((l) => l.rel)).toEqual(["deprecation", "successor-version"]);
    expect(linksOf(link)[1]!.url).toBe(
      "https://api.toolgate.example/gw/v2/tools/x%3E;rel=evil,%3Chttps:",
    );
  });

  it("leaves paths outside any version alone", async () => {
    for (const path of ["/healthz", "/docs", "/status.json"]) {
      const res = await fetch(`${gw.url}${path}`);
      expect(res.headers.get("deprecation"), path).toBeNull();
    }
  });
});

describe("a deprecated version after its sunset", () => {
  it("answers 410 version_retired naming the same path under the successor", async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: new Date("2027-05-22T00:00:01Z") });
    const tools = await call(`${gw.url}/v1/tools/hash`, { body: { text: "x" } });
    expect(tools.status).toBe(410);
    expect(tools.body.error).toMatchObject({
      code: "version_retired",
      successor: "/v2/tools/hash",
      successor_version: "v2",
    });
    expect(tools.headers.get("sunset")).toBe(SUNSET);
    const signup = await call(`${gw.url}/api/v1/signup`, { body: { email: "late@example.com" } });
    expect(signup.status).toBe(410);
    expect(signup.body.error.successor).toBe("/api/v2/signup");
  });
});

describe("a version's paths in other letters", () => {
  /** Paths are case-sensitive (http/router.ts): no spelling of a version's prefix escapes its lifecycle. */
  const OTHER_SPELLINGS = ["/V1/tools", "/API/V1/account", "/Api/v1/usage", "/api/V1/keys"];

  it("are no route: 404 in the one shape, before and after the sunset, and a call in them is not charged", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    const before = await balanceOf(gw.url, key);
    for (const now of ["2027-05-21T23:59:59Z", "2027-05-22T00:00:01Z"]) {
      vi.useFakeTimers({ toFake: ["Date"], now: new Date(now) });
      for (const path of OTHER_SPELLINGS) {
        const res = await call(`${gw.url}${path}`, { key });
        expect([now, path, res.status, res.body.error?.code]).toEqual([
          now,
          path,
          404,
          "route_not_found",
        ]);
        expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
      }
      for (const path of ["/V1/tools/hash", "/API/V1/tools/hash"]) {
        const res = await call(`${gw.url}${path}`, { key, body: { text: "x" } });
        expect([now, path, res.status]).toEqual([now, path, 404]);
      }
      vi.useRealTimers();
    }
    expect(await balanceOf(gw.url, key)).toBe(before);
  });

  it("are no route elsewhere either: one spelling per path", async () => {
    for (const path of ["/Healthz", "/DOCS", "/Dashboard", "/Mcp", "/X402/supported"]) {
      const res = await call(`${gw.url}${path}`);
      expect([path, res.status]).toEqual([path, 404]);
    }
    expect((await call(`${gw.url}/healthz`)).status).toBe(200);
  });
});

describe("versions in configuration", () => {
  it("without a deprecation, no answer carries the headers", async () => {
    const plain = await startGateway({ store: "memory" });
    try {
      const res = await call(`${plain.url}/v1/tools`);
      expect(res.status).toBe(200);
      expect(res.headers.get("deprecation")).toBeNull();
      expect(res.headers.get("sunset")).toBeNull();
      // Nor does the API description mark an operation deprecated.
      const doc = (await call(`${plain.url}/openapi.json`)).body;
      expect(JSON.stringify(doc.paths)).not.toContain('"deprecated":true');
    } finally {
      await plain.stop();
    }
  }, 90_000); // it starts a gateway of its own (hooks get 90 s for that; so does this test)

  it("refuses a deprecated version with no successor", () => {
    expect(() =>
      loadConfig({
        API_VERSIONS: JSON.stringify([
          { name: "v1", prefixes: ["/v1"], released: "2026-11-21", deprecated: "2026-11-22" },
        ]),
      }),
    ).toThrow(ConfigError);
    expect(() => loadConfig({ API_VERSIONS: "not json" })).toThrow(/API_VERSIONS/);
  });
});
