import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EVENT_DATA } from "../../src/events/types.js";
import { MAX_BATCH_MESSAGES } from "../../src/mcp/batches.js";
import { TOOLS } from "../../src/tools/catalogue/index.js";
import { admin, call, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";
import { postMcp } from "../helpers/mcp.js";

let gw: TestGateway;
let doc: any;
beforeAll(async () => {
  gw = await startGateway({ store: "memory" });
  doc = (await call(`${gw.url}/openapi.json`)).body;
});
afterAll(() => gw.stop());

describe("GET /openapi.json", () => {
  it("is a valid OpenAPI 3.1 document by an independent validator", async () => {
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.openapi).toBe("3.1.0");
  });

  it("covers every tool, with its input, output and price, behind the x-api-key scheme", () => {
    expect(doc.components.securitySchemes.ApiKey).toEqual({
      type: "apiKey",
      in: "header",
      name: "x-api-key",
      description: expect.any(String),
    });
    for (const tool of TOOLS) {
      const op = doc.paths[`/v1/tools/${tool.name}`]?.post;
      expect(op, tool.name).toBeDefined();
      // A key (x-api-key, or the same key as a Bearer token), or no key and an x402 payment.
      expect(op.security).toEqual([{ ApiKey: [] }, { BearerKey: [] }, {}]);
      expect(op.requestBody.content["application/json"].schema.examples.length).toBeGreaterThan(0);
      expect(op.responses["200"].content["application/json"].schema.type).toBe("object");
      expect(op["x-price"].credits).toBe(tool.cost);
      expect(Object.keys(op.responses)).toEqual(
        expect.arrayContaining(["401", "402", "422", "429", "502", "503", "504"]),
      );
    }
  });

  it("says when to retry on every 503 and 429 (Retry-After), as the answers do", () => {
    // All but /readyz's 503: the probe's own answer, which has none (tested below).
    const answers = Object.entries(doc.paths).flatMap(([path, ops]: [string, any]) =>
      Object.values(ops).flatMap((op: any) =>
        ["429", "503"].flatMap((status) =>
          op.responses?.[status] && !(path === "/readyz" && status === "503")
            ? [op.responses[status]]
            : [],
        ),
      ),
    );
    expect(answers.length).toBeGreaterThan(50);
    for (const answer of answers)
      expect(answer.headers?.["Retry-After"], answer.description).toMatchObject({
        schema: { type: "integer" },
      });
  });

  it("lists the errors each operation answers: the body's own, a tier's feature, a limited key, a purchase's 402", () => {
    const codes = (path: string, method: string, status: string) =>
      (doc.paths[path][method].responses[status]?.description ?? "").split(", ");
    // Any JSON body: unreadable (400), too large or deep (413), not JSON (415).
    for (const [path, method] of [
      ["/v1/tools/hash", "post"],
      ["/api/v1/keys", "post"],
      ["/api/v1/signup", "post"],
    ] as const) {
      expect(codes(path, method, "400"), path).toContain("invalid_json");
      expect(codes(path, method, "413"), path).toEqual(["body_too_large", "body_too_deep"]);
      expect(codes(path, method, "415"), path).toEqual(["unsupported_media_type"]);
    }
    expect(codes("/v1/tools/hash", "post", "403")).toContain("tool_not_allowed");
    expect(codes("/v1/tools/{name}", "get", "404")).toContain("tool_not_found");
    expect(codes("/api/v1/signup", "post", "409")).toContain("email_taken");
    expect(codes("/api/v1/credits/purchase", "post", "402")).toContain("payment_required");
    expect(codes("/api/v1/plans/purchase", "post", "402")).toContain("payment_required");
    expect(codes("/api/v1/custom-tools", "get", "403")).toContain("feature_not_in_tier");
    expect(codes("/api/v1/keys", "post", "403")).toContain("unrestricted_key_required");
    expect(codes("/api/v1/account/sso", "put", "403")).toEqual([
      "feature_not_in_tier",
      "unrestricted_key_required",
    ]);
    expect(codes("/api/v1/analytics", "get", "501")).toEqual(["analytics_not_enabled"]);
    // GET has no body: none of its errors.
    expect(doc.paths["/api/v1/keys"].get.responses["415"]).toBeUndefined();
  });

  it("documents every error code an operation answers on some operation; the rest belong to no operation", () => {
    const documented = new Set(
      Object.values(doc.paths).flatMap((ops: any) =>
        Object.values(ops).flatMap((op: any) =>
          Object.entries(op.responses ?? {}).flatMap(([status, answer]: [string, any]) =>
            status.startsWith("4") || status.startsWith("5")
              ? (answer.description ?? "").split(", ")
              : [],
          ),
        ),
      ),
    );
    // Answered by the HTTP layer before any route, by the load balancer, or by the dashboard's
    // pages (outside this document); the README's error table lists them.
    const noOperations = [
      "bad_request",
      "invalid_path",
      "method_not_allowed",
      "request_timeout",
      "headers_too_large",
      "expectation_failed",
      "route_not_found",
      "version_retired",
      "internal_error",
      "replica_failed",
      "replica_timeout",
      "session_required",
      "csrf_failed",
      "sso_sign_in_failed",
      "sso_provider_unavailable",
    ];
    const codes = doc.components.schemas.Error.properties.error.properties.code.enum as string[];
    expect(codes.filter((code) => !documented.has(code) && !noOperations.includes(code))).toEqual(
      [],
    );
    const keyed = (path: string, method: string) =>
      doc.paths[path][method].responses["401"].description.split(", ");
    expect(keyed("/api/v1/keys", "get")).toContain("api_key_expired");
    expect(keyed("/api/v1/account", "get")).toContain("api_key_expired");
  });

  it("documents what POST /mcp answers: no key (x402) as the tool routes, 202, and JSON-RPC errors for an unreadable body", async () => {
    const op = doc.paths["/mcp"].post;
    expect(op.security).toEqual(doc.paths["/v1/tools/hash"].post.security);
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const mcp = (body: string, headers: Record<string, string> = {}) =>
      fetch(`${gw.url}/mcp`, {
        method: "POST",
        headers: {
          "x-api-key": key,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...headers,
        },
        body,
      });
    const ajv = documentValidator();
    for (const [what, answer, withBody] of [
      [
        "a notification",
        await mcp('{"jsonrpc":"2.0","method":"notifications/initialized"}'),
        false,
      ],
      ["JSON that does not parse", await mcp("{bad"), true],
      ["a body over the limit", await mcp(`{"a":"${"x".repeat(3_000_000)}"}`), true],
      ["a body that is not JSON", await mcp("x", { "content-type": "text/plain" }), true],
      [
        "a batch repeating a request id",
        await mcp(
          '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]',
        ),
        true,
      ],
      ["an Accept without the event stream", await mcp("{}", { accept: "application/json" }), true],
      [
        "a string escaping a lone surrogate",
        await mcp('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"\\ud800"}}'),
        true,
      ],
    ] as const) {
      const documented = op.responses[String(answer.status)];
      expect([what, answer.status, documented !== undefined]).toEqual([what, answer.status, true]);
      const text = await answer.text();
      if (!withBody) continue;
      const schema = documented.content?.["application/json"]?.schema;
      expect(schema, what).toBeDefined();
      const valid = ajv.validate(schema, JSON.parse(text));
      expect([what, valid, ajv.errors ?? null]).toEqual([what, true, null]);
    }
  });

  it("documents POST /mcp's body as what it serves: a JSON-RPC message, or a non-empty batch of them", async () => {
    const body = doc.paths["/mcp"].post.requestBody;
    expect(body.required).toBe(true);
    const schema = body.content["application/json"].schema;
    const validate = documentValidator().compile(schema);
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const post = (json: unknown) => postMcp(gw.url, key, json);
    const ping = (id: number | string) => ({ jsonrpc: "2.0", id, method: "ping" });
    const notification = { jsonrpc: "2.0", method: "notifications/initialized" };
    // What the gateway serves, the document takes.
    for (const [what, json, status] of [
      ["a request", ping(1), 200],
      ["a notification", notification, 202],
      ["a batch of requests", [ping(1), ping("two")], 200],
      ["a batch with a notification", [notification, ping(3)], 200],
    ] as const) {
      const res = await post(json);
      expect([what, res.status]).toEqual([what, status]);
      expect([what, validate(json), validate.errors ?? null]).toEqual([what, true, null]);
    }
    // What it refuses, the document does not take.
    for (const [what, json] of [
      ["an empty batch", []],
      ["a batch over the cap", Array.from({ length: MAX_BATCH_MESSAGES + 1 }, (_, i) => ping(i))],
      ["not JSON-RPC", { method: "ping", id: 1 }],
      ["a bare number", 1],
    ] as const) {
      const res = await post(json);
      expect([what, res.status]).toEqual([what, 400]);
      expect([what, validate(json)]).toEqual([what, false]);
    }
  });

  it("covers every account and admin endpoint, with their request schemas", () => {
    const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item as object).map((m) => `${m.toUpperCase()} ${path}`),
    );
    expect(operations).toEqual(
      expect.arrayContaining([
        "POST /api/v1/signup",
        "GET /api/v1/verify-email",
        "GET /api/v1/account",
        "GET /api/v1/keys",
        "POST /api/v1/keys",
        "POST /api/v1/keys/{id}/rotate",
        "DELETE /api/v1/keys/{id}",
        "GET /api/v1/usage",
        "GET /api/v1/admin/accounts",
        "PUT /api/v1/admin/accounts/{id}/tier",
        "POST /api/v1/admin/accounts/{id}/credits",
        "GET /v1/tools",
        "GET /v1/tools/{name}",
      ]),
    );
    expect(
      doc.paths["/api/v1/signup"].post.requestBody.content["application/json"].schema.required,
    ).toEqual(["email"]);
    expect(doc.paths["/api/v1/admin/accounts/{id}/tier"].put.security).toEqual([{ AdminKey: [] }]);
  });

  it("marks a request body required only where a request without one is refused", async () => {
    const { key } = await fundedAccount(gw.url, 0);
    // No body is an empty one: a new key, or a rotated one, with nothing to set.
    const created = await call(`${gw.url}/api/v1/keys`, { key, method: "POST" });
    expect(created.status).toBe(201);
    const rotated = await call(`${gw.url}/api/v1/keys/${created.body.id}/rotate`, {
      key,
      method: "POST",
    });
    expect(rotated.status).toBe(201);
    expect(doc.paths["/api/v1/keys"].post.requestBody.required).toBe(false);
    expect(doc.paths["/api/v1/keys/{id}/rotate"].post.requestBody.required).toBe(false);
    expect(doc.paths["/api/v1/keys/{id}"].patch.requestBody.required).toBe(false);
    // A body whose fields are required stays required: none is refused.
    const noBody = await call(`${gw.url}/api/v1/signup`, { method: "POST" });
    expect([noBody.status, noBody.body.error.code]).toEqual([422, "validation_failed"]);
    expect(doc.paths["/api/v1/signup"].post.requestBody.required).toBe(true);
  });

  it("documents the statuses these endpoints really answer: a replayed grant's 200, an unreadable cursor's 400", async () => {
    const { accountId } = await fundedAccount(gw.url, 0);
    const grant = () =>
      admin(gw.url, `/accounts/${accountId}/credits`, {
        body: { amount: 5, reason: "openapi test" },
        headers: { "idempotency-key": `grant-${accountId}` },
      });
    const [first, again] = [await grant(), await grant()];
    expect([first.status, again.status, again.body.applied]).toEqual([201, 200, false]);
    const grantOp = doc.paths["/api/v1/admin/accounts/{id}/credits"].post;
    expect(Object.keys(grantOp.responses)).toEqual(expect.arrayContaining(["200", "201"]));
    expect(grantOp.responses["200"].content).toEqual(grantOp.responses["201"].content);
    // The Idempotency-Key the grant honours is a documented header, bounded as the tool call's is.
    expect(
      grantOp.parameters.map((p: { name: string; in: string }) => `${p.in} ${p.name}`),
    ).toEqual(["path id", "header Idempotency-Key"]);
    expect(grantOp.parameters[1].schema).toEqual(
      doc.paths["/v1/tools/hash"].post.parameters.find(
        (p: { name: string }) => p.name === "Idempotency-Key",
      ).schema,
    );

    for (const path of ["/api/v1/admin/accounts", "/api/v1/usage", "/api/v1/events"]) {
      const res = path.includes("admin")
        ? await admin(gw.url, "/accounts?cursor=zzz")
        : await call(`${gw.url}${path}?cursor=zzz`, { key: (await fundedAccount(gw.url, 0)).key });
      expect([path, res.status, res.body.error.code]).toEqual([path, 400, "invalid_cursor"]);
      expect(doc.paths[path].get.responses["400"].description, path).toContain("invalid_cursor");
    }
    // The catalogue is public, but a key sent with it is checked.
    const unknownKey = await call(`${gw.url}/v1/tools`, { key: `tg_live_${"x".repeat(40)}` });
    expect([unknownKey.status, unknownKey.body.error.code]).toEqual([401, "invalid_api_key"]);
    expect(doc.paths["/v1/tools"].get.responses["401"].description).toContain("invalid_api_key");
  });
});

describe("the CSV exports", () => {
  it("document text/csv beside JSON, and the Link header of the next CSV page", () => {
    for (const path of ["/api/v1/usage", "/api/v1/analytics"]) {
      const ok = doc.paths[path].get.responses["200"];
      expect(Object.keys(ok.content), path).toEqual(["application/json", "text/csv"]);
      expect(ok.headers["Content-Disposition"], path).toBeDefined();
    }
    expect(doc.paths["/api/v1/usage"].get.responses["200"].headers.Link.description).toContain(
      'rel="next"',
    );
  });
});

describe("tool aliases", () => {
  it("are noted on their tool's one operation (x-aliases and the description), not as operations of their own", async () => {
    const op = doc.paths["/v1/tools/web-search"].post;
    expect(op["x-aliases"]).toEqual(["search-web"]);
    expect(op.description).toContain("also callable as POST /v1/tools/search-web");
    expect(doc.paths["/v1/tools/search-web"]).toBeUndefined();
    expect(doc.paths["/v1/tools/hash"].post["x-aliases"]).toBeUndefined(); // a tool without aliases
  });
});

describe("x402 on a tool call", () => {
  it("documents the offer in the 402's body and PAYMENT-REQUIRED header, and a paid call's receipt headers", () => {
    const call = doc.paths["/v1/tools/hash"].post;
    const offered = call.responses["402"];
    expect(offered.headers["PAYMENT-REQUIRED"]).toBeDefined();
    expect(offered.content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/PaymentRequired",
    });
    const schema = doc.components.schemas.PaymentRequired;
    expect(schema.allOf).toEqual([{ $ref: "#/components/schemas/Error" }]);
    expect(Object.keys(schema.properties)).toEqual(["x402Version", "accepts"]);
    expect(Object.keys(call.responses["200"].headers)).toEqual(
      expect.arrayContaining(["PAYMENT-RESPONSE", "X-PAYMENT-RESPONSE", "RateLimit-Policy"]),
    );
    // A purchase's 402 offers payment too; a 402 that offers nothing keeps the one error shape.
    expect(
      doc.paths["/api/v1/credits/purchase"].post.responses["402"].content["application/json"].schema
        .$ref,
    ).toBe("#/components/schemas/PaymentRequired");
    expect(
      doc.paths["/api/v1/admin/accounts"].get.responses["401"].content["application/json"].schema
        .$ref,
    ).toBe("#/components/schemas/Error");
    // Every keyed answer carries RateLimit-Policy (http/auth.ts).
    expect(
      doc.paths["/api/v1/account"].get.responses["200"].headers["RateLimit-Policy"],
    ).toBeDefined();
  });
});

describe("the public pages and MCP", () => {
  it("are documented as what they serve: each page with its media type, MCP with an operationId", async () => {
    const pages: [string, string][] = [
      ["/docs", "text/html"],
      ["/llms.txt", "text/plain"],
      ["/changelog", "text/html"],
      ["/changelog.rss", "application/rss+xml"],
      ["/status", "text/html"],
      ["/status.json", "application/json"],
      ["/status.rss", "application/rss+xml"],
    ];
    for (const [path, mediaType] of pages) {
      const op = doc.paths[path]?.get;
      expect(op, path).toBeDefined();
      expect(Object.keys(op.responses["200"].content), path).toEqual([mediaType]);
      expect(op.security, path).toEqual([]);
      const res = await fetch(`${gw.url}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type"), path).toContain(mediaType);
    }
    expect(doc.paths["/mcp"].post.operationId).toBe("postMcp");
    // /llms.txt tells a model what this gateway takes: it has no x402 networks, so a call needs a
    // key (a model told to pay would be answered 401 missing_api_key, never an offer).
    const llms = await (await fetch(`${gw.url}/llms.txt`)).text();
    expect(llms).toContain(
      "- Without a key: refused, 401 `missing_api_key`: this gateway takes no x402 payments.",
    );
    expect(llms).not.toContain("PAYMENT-SIGNATURE");
    expect(llms).not.toContain("x402/payment");
    // So does /docs: its keyless example is answered 401 here, not 402 with an offer.
    const docs = await (await fetch(`${gw.url}/docs`)).text();
    expect(docs).toContain(
      "This gateway takes no x402 payments: a tool call without a key is refused, <strong>401</strong> <code>missing_api_key</code>.",
    );
    const keyless = [
      ...docs.matchAll(
        /<pre[^>]* data-expect="(\d+)"><code>curl[^<]*\/v1\/tools\/hash&quot;[^<]*<\/code>/g,
      ),
    ].filter((m) => !m[0].includes("x-api-key"));
    expect(keyless.map((m) => m[1])).toEqual(["401"]);
    // Its purchase examples are answered 501 payments_not_enabled here, as the routes answer them.
    const { key } = await fundedAccount(gw.url, 10);
    for (const path of ["/api/v1/credits/purchase", "/api/v1/plans/purchase"]) {
      const example = new RegExp(
        `<pre[^>]* data-expect="(\\d+)"><code>curl[^<]*${path}&quot;`,
      ).exec(docs);
      expect(example?.[1], path).toBe("501");
      const body = path.includes("plans") ? { plan: "starter" } : { pack: "1k" };
      const res = await call(`${gw.url}${path}`, { key, body });
      expect([res.status, res.body.error.code], path).toEqual([501, "payments_not_enabled"]);
    }
    const ids = Object.values<Record<string, { operationId?: string }>>(doc.paths).flatMap((item) =>
      Object.values(item).map((op) => op.operationId),
    );
    expect(ids.filter((id) => id === undefined)).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe("webhook deliveries", () => {
  it("are documented per event type: the envelope, the event's data fields, the signed headers; /docs lists them", async () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual(Object.keys(EVENT_DATA).sort());
    const lowBody = doc.webhooks["credits.low"].post.requestBody.content["application/json"].schema;
    expect(lowBody.required).toEqual(["id", "event", "timestamp", "data"]);
    expect(lowBody.properties.event).toEqual({ type: "string", const: "credits.low" });
    expect(lowBody.properties.data.required).toEqual([
      "credits_remaining",
      "tool_name",
      "threshold",
    ]);
    const toolError =
      doc.webhooks["tool.error"].post.requestBody.content["application/json"].schema;
    expect(Object.keys(toolError.properties.data.properties)).toEqual(
      expect.arrayContaining(["tool_name", "credits_charged", "error_code", "request_id"]),
    );
    expect(
      doc.webhooks["webhook.test"].post.parameters.map((p: { name: string }) => p.name),
    ).toEqual([
      "X-Webhook-Id",
      "X-Webhook-Event",
      "X-Webhook-Timestamp",
      "X-Webhook-Signature",
      "webhook-id",
      "webhook-timestamp",
      "webhook-signature",
      "User-Agent",
    ]);
    const page = await (await fetch(`${gw.url}/docs`)).text();
    const section = page.match(/<section id="event-credits\.low"[\s\S]*?<\/section>/)?.[0];
    expect(section).toContain("<code>credits_remaining</code>");
    expect(section).toContain("<code>threshold</code>");
  });
});

describe("security schemes", () => {
  it("offer the key as a Bearer token wherever x-api-key takes it, as every keyed door reads it", async () => {
    expect(doc.components.securitySchemes.BearerKey).toEqual({
      type: "http",
      scheme: "bearer",
      description: expect.stringContaining("Authorization: Bearer tg_live_"),
    });
    expect(doc.security).toEqual([{ ApiKey: [] }, { BearerKey: [] }]);
    // Each operation that takes the key offers the bearer as a separate alternative (OR), never
    // both together (AND); the admin key is not a tg_ key, so not read from a Bearer.
    let keyed = 0;
    for (const [path, item] of Object.entries<Record<string, { security?: object[] }>>(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const schemes: object[] = op.security ?? doc.security;
        const names = schemes.map((s) => Object.keys(s).join("+"));
        expect(names, `${method} ${path}`).not.toContain("ApiKey+BearerKey");
        if (names.includes("ApiKey")) {
          keyed++;
          expect(names, `${method} ${path}`).toContain("BearerKey");
        }
        if (names.includes("AdminKey")) expect(names, `${method} ${path}`).toEqual(["AdminKey"]);
      }
    }
    expect(keyed).toBeGreaterThan(20);
    expect(doc.paths["/api/v1/account"].get.security).toEqual([{ ApiKey: [] }, { BearerKey: [] }]);
    expect(doc.paths["/mcp"].post.security).toEqual([{ ApiKey: [] }, { BearerKey: [] }, {}]);
    // And the gateway does take it so, on an account route and a tool call.
    const { key, accountId } = await fundedAccount(gw.url, 10);
    const bearer = { authorization: `Bearer ${key}` };
    const account = await call(`${gw.url}/api/v1/account`, { headers: bearer });
    expect([account.status, account.body.id]).toEqual([200, accountId]);
    const hashed = await call(`${gw.url}/v1/tools/hash`, {
      headers: bearer,
      body: { text: "a" },
    });
    expect(hashed.status).toBe(200);
  });
});

describe("an operator's gateway: METRICS_TOKEN set, its store unreachable", () => {
  let down: TestGateway;
  beforeAll(async () => {
    down = await startGateway({
      env: {
        REDIS_URL: "redis://127.0.0.1:1",
        SECRET_KEY: "s".repeat(40),
        METRICS_TOKEN: "m".repeat(24),
      },
    });
  });
  afterAll(() => down?.stop());

  it("GET /readyz: the document describes the 503 it answers, the probe's own body, not the error shape", async () => {
    const op = doc.paths["/readyz"].get;
    const notReady = op.responses["503"];
    // Its store unreachable, or the process shutting down (SHUTDOWN_DELAY_SECONDS).
    expect(notReady.content["application/json"].schema).toEqual({
      anyOf: [
        {
          type: "object",
          properties: {
            status: { type: "string", const: "unavailable" },
            store: { type: "string", const: "unreachable" },
          },
          required: ["status", "store"],
          additionalProperties: false,
        },
        {
          type: "object",
          properties: { status: { type: "string", const: "shutting_down" } },
          required: ["status"],
          additionalProperties: false,
        },
      ],
    });
    expect(notReady.headers["Retry-After"]).toBeUndefined();
    expect(op.responses["200"].content["application/json"].schema.properties.status).toEqual({
      type: "string",
      const: "ready",
    });
    const res = await fetch(`${down.url}/readyz`);
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBeNull();
    const ajv = documentValidator();
    const body = await res.json();
    expect([ajv.validate(notReady.content["application/json"].schema, body), ajv.errors]).toEqual([
      true,
      null,
    ]);
    // The document served by that gateway says the same.
    const itsDoc = (await call(`${down.url}/openapi.json`)).body;
    expect(itsDoc.paths["/readyz"].get.responses["503"]).toEqual(notReady);
  });

  it("GET /metrics: open, or a Bearer METRICS_TOKEN when the gateway sets one, as the document says", async () => {
    const op = doc.paths["/metrics"].get;
    expect(op.security).toEqual([{}, { MetricsToken: [] }]);
    expect(doc.components.securitySchemes.MetricsToken).toEqual({
      type: "http",
      scheme: "bearer",
      description: expect.stringContaining("METRICS_TOKEN"),
    });
    expect(op.responses["401"].description).toBe("metrics_token_required");
    // No token set: open (the empty alternative).
    expect((await fetch(`${gw.url}/metrics`)).status).toBe(200);
    // A token set: 401 without it, 200 with it as a Bearer.
    const refused = await fetch(`${down.url}/metrics`);
    expect([refused.status, refused.headers.get("www-authenticate")]).toEqual([
      401,
      'Bearer realm="metrics"',
    ]);
    const served = await fetch(`${down.url}/metrics`, {
      headers: { authorization: `Bearer ${"m".repeat(24)}` },
    });
    expect(served.status).toBe(200);
    // /docs says so too, and shows no API key or x402 payment for it.
    const page = await (await fetch(`${gw.url}/docs`)).text();
    const section = page.match(/<section id="get-metrics"[\s\S]*?<\/section>/)?.[0];
    expect(section).toContain("unless the gateway sets <code>METRICS_TOKEN</code>");
    expect(section).not.toContain("x402");
    expect(section).not.toContain("x-api-key");
  });
});

/** Validates an answer against the document's schema, formats (date-time…) included. */
const documentValidator = () => {
  const ajv = new Ajv2020({ strict: false });
  addFormats.default(ajv);
  return ajv;
};

describe("/status.json", () => {
  it("answers exactly what the document says, incidents and checked components included", async () => {
    const schema =
      doc.paths["/status.json"].get.responses["200"].content["application/json"].schema;
    // Every field named, none left as a bare object, and nothing more allowed.
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties.components.items.required).toEqual(
      expect.arrayContaining(["id", "state", "uptime_90d", "days", "latency_ms"]),
    );
    expect(schema.properties.incidents.properties.active.items.required).toEqual(
      expect.arrayContaining(["id", "status", "updates", "resolved_at"]),
    );
    const first = (await call(`${gw.url}/status.json`)).body;
    const component = first.components[0].id;
    const open = await admin(gw.url, "/incidents", {
      body: { title: "Slow hashes", message: "Looking", components: [component], impact: "minor" },
    });
    const done = await admin(gw.url, "/incidents", { body: { title: "Blip", message: "Seen" } });
    await admin(gw.url, `/incidents/${open.body.id}/updates`, {
      body: { status: "monitoring", message: "Better" },
    });
    await admin(gw.url, `/incidents/${done.body.id}/resolve`, { body: {} });
    // The report is cached for up to a second, and the first checks land in the background.
    let report: any;
    const deadline = Date.now() + 15_000;
    do {
      await new Promise((r) => setTimeout(r, 250));
      report = (await call(`${gw.url}/status.json`)).body;
    } while (
      (report.incidents.active.length === 0 ||
        report.incidents.recent.length === 0 ||
        report.components.every((c: { checked_at: string | null }) => c.checked_at === null)) &&
      Date.now() < deadline
    );
    expect(report.incidents.active.map((i: { id: string }) => i.id)).toContain(open.body.id);
    expect(report.incidents.recent.map((i: { id: string }) => i.id)).toContain(done.body.id);
    expect(report.components.some((c: { checked_at: string | null }) => c.checked_at)).toBe(true);
    const validate = documentValidator().compile(schema);
    expect(validate(report), JSON.stringify(validate.errors)).toBe(true);
    expect(validate(first), JSON.stringify(validate.errors)).toBe(true);
    // The schema does refuse what the page does not send.
    expect(validate({ ...report, uptime: 1 })).toBe(false);
    expect(validate({ ...report, components: [{ ...report.components[0], state: "down" }] })).toBe(
      false,
    );
  });
});

describe("tags", () => {
  it("put every operation in one of the reference's groups", () => {
    const groups = [
      "Tools",
      "Payments",
      "Account",
      "Keys",
      "Usage",
      "Webhooks",
      "MCP",
      "Admin",
      "Operations",
    ];
    expect(doc.tags.map((t: { name: string }) => t.name)).toEqual(groups);
    for (const [path, item] of Object.entries<Record<string, { tags: string[] }>>(doc.paths)) {
      for (const [method, op] of Object.entries(item))
        expect(groups, `${method} ${path}`).toContain(op.tags?.[0]);
    }
    expect(doc.paths["/api/v1/keys"].get.tags).toEqual(["Keys"]);
    expect(doc.paths["/api/v1/webhooks/register"].post.tags).toEqual(["Webhooks"]);
    expect(doc.paths["/api/v1/wallet/challenge"].post.tags).toEqual(["Payments"]);
    expect(doc.paths["/mcp"].post.tags).toEqual(["MCP"]);
    expect(doc.paths["/api/v1/admin/incidents"].post.tags).toEqual(["Admin"]);
  });
});

describe("GET /docs", () => {
  it("renders a readable page of every endpoint and tool, with no third-party scripts and no ±2^53 bounds", async () => {
    const res = await fetch(`${gw.url}/docs`);
    const html = await res.text();
    expect(res.headers.get("content-type")).toContain("text/html");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(html).toContain("<code>POST /v1/tools/web-search</code>");
    expect(html).toContain("<code>/api/v1/signup</code>");
    expect(html).not.toMatch(/<script[^>]+src="(https?:)?\/\//i);
    expect(html).not.toContain("9007199254740991");
  });

  it("states prices with plural agreement: 1 credit, 5 credits", async () => {
    const doc = (await call(`${gw.url}/openapi.json`)).body;
    expect(doc.paths["/v1/tools/hash"].post.description).toContain("Price: 1 credit ($0.002)");
    expect(doc.paths["/v1/tools/web-search"].post.description).toContain(
      "Price: 5 credits ($0.01)",
    );
    expect(JSON.stringify(doc)).not.toMatch(/\b1 credits|credit\(s\)/);
  });

  it("is served as an HTML page no browser sniffs as anything else, and no site may frame", async () => {
    const res = await fetch(`${gw.url}/docs`);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("default-src 'none'");
  });

  it("its JSON documents (this one, /.well-known/x402) let nothing run or frame them if a browser opens one", async () => {
    for (const path of ["/openapi.json", "/.well-known/x402"]) {
      const res = await fetch(`${gw.url}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-security-policy"), path).toBe(
        "default-src 'none'; frame-ancestors 'none'",
      );
      expect(res.headers.get("cache-control"), path).toBe("public, max-age=300");
    }
  });

  it("every other answer is marked nosniff too, errors included", async () => {
    for (const path of ["/openapi.json", "/v1/tools", "/healthz", "/no-such-page"]) {
      expect((await fetch(`${gw.url}${path}`)).headers.get("x-content-type-options"), path).toBe(
        "nosniff",
      );
    }
  });
});
