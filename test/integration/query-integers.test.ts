import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ADMIN_KEY,
  call,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";

/**
 * A query parameter documented as `integer` takes decimal digits and nothing else: hexadecimal,
 * an exponent, a fraction, spaces, a sign `+` or an empty value are 422 `validation_failed`
 * naming the parameter, on every route that has one (found in the OpenAPI document, so a new
 * one is covered), while the document keeps the type and bounds.
 */
let gw: TestGateway;
let key: string;
let integerParams: { path: string; name: string; schema: Record<string, unknown> }[];
beforeAll(async () => {
  gw = await startGateway({ store: "memory" });
  key = (await fundedAccount(gw.url, 100)).key;
  const doc = (await call(`${gw.url}/openapi.json`)).body;
  integerParams = [];
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>))
    for (const param of ops.get?.parameters ?? [])
      if (param.in === "query" && param.schema.type === "integer")
        integerParams.push({ path, name: param.name, schema: param.schema });
});
afterAll(() => gw.stop());

/** A GET of `path` (its `{id}` filled in) as its caller: the admin key under /admin, else an account's. */
const get = (path: string, query: string) =>
  call(`${gw.url}${path.replace(/\{[^}]+\}/g, "whk_0000000000000000")}?${query}`, {
    key: path.startsWith("/api/v1/admin/") ? ADMIN_KEY : key,
  });

describe("integer query parameters", () => {
  it("are documented as integers with their bounds, on every paged list", () => {
    expect(
      integerParams.map((p) => `${p.path} ${p.name} ${p.schema.minimum}..${p.schema.maximum}`),
    ).toEqual([
      "/api/v1/usage limit 1..10000",
      "/api/v1/events limit 1..1000",
      "/api/v1/webhooks/{id}/deliveries limit 1..500",
      "/api/v1/admin/accounts limit 1..100",
      "/api/v1/admin/webhooks/{id}/deliveries limit 1..500",
    ]);
  });

  it.each(["0x10", "1e1", "", " 5", "5 ", "5.0", "+5", "1_0", "0b1", "5&limit=6"])(
    "refuse %j with 422 naming the parameter",
    async (value) => {
      for (const { path, name } of integerParams) {
        const query = value.includes("&")
          ? `${name}=${value}`
          : `${name}=${encodeURIComponent(value)}`;
        const res = await get(path, query);
        expect([path, res.status, res.body.error?.code, res.body.error?.param]).toEqual([
          path,
          422,
          "validation_failed",
          name,
        ]);
      }
    },
  );

  it.each(["0x10", ""])("say what they take when given %j", async (value) => {
    const res = await get("/api/v1/usage", `limit=${value}`);
    expect(res.body.error.message).toBe(
      'Invalid query field "limit": must be an integer in decimal digits.',
    );
  });

  it("take decimal digits, and state their bounds past them", async () => {
    expect((await get("/api/v1/usage", "limit=5")).status).toBe(200);
    expect((await get("/api/v1/usage", "limit=05")).status).toBe(200);
    expect((await get("/api/v1/admin/accounts", "limit=100")).status).toBe(200);
    for (const [query, message] of [
      ["limit=0", "Too small: expected number to be >=1"],
      ["limit=-5", "Too small: expected number to be >=1"],
      ["limit=101", "Too big: expected number to be <=100"],
      ["limit=99999999999999999999", "Too big: expected number to be <=100"],
    ] as const)
      expect((await get("/api/v1/admin/accounts", query)).body.error.message).toBe(
        `Invalid query field "limit": ${message}.`,
      );
  });
});
