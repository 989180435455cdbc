import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOORS } from "../../src/routes.js";
import { call, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";

/**
 * A known path asked with the wrong method is 405 `method_not_allowed` with an `Allow` header,
 * in the one error shape — for every route the gateway serves, not only the tool calls.
 */
let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ store: "memory" });
});
afterAll(async () => {
  await gw?.stop();
});

/** Every route as (method, path pattern), from the registry the gateway mounts. */
const at = (prefix: string, path: string) => `${prefix}${path === "/" ? "" : path}` || "/";
const ROUTES: [string, string][] = DOORS.flatMap((door) =>
  "routes" in door
    ? door.routes.map((r) => [r.method.toUpperCase(), at(door.prefix, r.path)] as [string, string])
    : Object.entries(door.serves).flatMap(([path, methods]) =>
        methods.map((m) => [m, at(door.prefix, path)] as [string, string]),
      ),
);
const concrete = (pattern: string) => pattern.replace(/:\w+/g, "x1");
const matches = (pattern: string, path: string) =>
  new RegExp(`^${pattern.replace(/:\w+/g, "[^/]+")}$`).test(path);
const ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

describe("a known path with a method it does not serve", () => {
  it("PUT /v1/tools/hash is 405 with Allow, not 404", async () => {
    const res = await call(`${gw.url}/v1/tools/hash`, { method: "PUT", body: { text: "x" } });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, HEAD, POST, OPTIONS");
    expect(res.body.error).toMatchObject({
      type: "invalid_request_error",
      code: "method_not_allowed",
      request_id: expect.stringMatching(/^req_/),
    });
  });

  it("POST /v1/tools/categories is 405 with Allow GET, not the call of a tool that cannot exist", async () => {
    // "categories" is a reserved tool name (tools/custom/spec.ts): no tool can be called so.
    for (const key of [undefined, (await fundedAccount(gw.url, 100)).key]) {
      for (const method of ["POST", "PUT"]) {
        const res = await call(`${gw.url}/v1/tools/categories`, { method, key, body: {} });
        expect(
          [res.status, res.headers.get("allow"), res.body.error.code],
          `${method} ${key ? "with" : "without"} a key`,
        ).toEqual([405, "GET, HEAD, OPTIONS", "method_not_allowed"]);
      }
    }
    expect((await call(`${gw.url}/v1/tools/categories`)).status).toBe(200);
  });

  it("a fixed path beside a pattern (/webhooks/register beside /webhooks/{id}) lists its own methods only", async () => {
    const res = await call(`${gw.url}/api/v1/webhooks/register`, { method: "DELETE" });
    expect([res.status, res.headers.get("allow"), res.body.error.code]).toEqual([
      405,
      "POST, OPTIONS",
      "method_not_allowed",
    ]);
  });

  it("is 405 on every route, with Allow naming exactly the methods served there", async () => {
    const failures: string[] = [];
    const labels: string[] = [];
    for (const [, pattern] of ROUTES) {
      const path = concrete(pattern);
      // A fixed path is served by its own routes only, not by a pattern that matches it too.
      const own = ROUTES.filter(([, p]) => p === path);
      const served = new Set(
        (own.length ? own : ROUTES.filter(([, p]) => matches(p, path))).map(([m]) => m),
      );
      if (served.has("GET")) served.add("HEAD");
      served.add("OPTIONS");
      const wrong = ["PATCH", "PUT", "DELETE", "POST"].find((m) => !served.has(m))!;
      const res = await call(`${gw.url}${path}`, { method: wrong });
      labels.push(`{route="${own.length ? path : pattern}",method="${wrong}",status="405"}`);
      const expected = ORDER.filter((m) => served.has(m)).join(", ");
      if (
        res.status !== 405 ||
        res.headers.get("allow") !== expected ||
        res.body?.error?.code !== "method_not_allowed"
      ) {
        failures.push(
          `${wrong} ${path}: ${res.status} Allow=${res.headers.get("allow")} (expected 405 Allow=${expected})`,
        );
      }
    }
    expect(failures).toEqual([]);
    // Each 405 is counted under its route's whole pattern, mount prefix included (it was
    // `/keys/:id` for /api/v1/keys/:id).
    const metrics = await (await fetch(`${gw.url}/metrics`)).text();
    expect(labels.filter((l) => !metrics.includes(`toolgate_http_requests_total${l}`))).toEqual([]);
  });

  it("/mcp serves POST only (stateless: no stream for GET, no session for DELETE), and says so the same way for every other method", async () => {
    for (const method of ["GET", "DELETE", "PUT"]) {
      const res = await call(`${gw.url}/mcp`, {
        method,
        headers: { accept: "application/json, text/event-stream" },
      });
      expect([res.status, res.headers.get("allow"), res.body.error.code], method).toEqual([
        405,
        "POST, OPTIONS",
        "method_not_allowed",
      ]);
    }
  });

  it("an unknown path stays 404 route_not_found", async () => {
    const res = await call(`${gw.url}/v1/nothing-here`, { method: "PUT" });
    expect([res.status, res.body.error.code]).toEqual([404, "route_not_found"]);
  });

  it("an unknown address opened in a browser is a 404 page (an API client still gets the error shape)", async () => {
    for (const path of ["/docs/nope", "/status/x"]) {
      const page = await fetch(`${gw.url}${path}`, {
        headers: { accept: "text/html,application/xhtml+xml,*/*;q=0.8" },
      });
      expect([page.status, page.headers.get("content-type")]).toEqual([
        404,
        "text/html; charset=utf-8",
      ]);
      expect(await page.text()).toContain(`There is nothing at ${path}.`);
      const json = await call(`${gw.url}${path}`);
      expect([json.status, json.body.error.code]).toEqual([404, "route_not_found"]);
    }
  });
});
