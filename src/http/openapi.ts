import { z } from "zod";
import { apiRoutes } from "../api-routes.js";
import type { Config } from "../config.js";
import { TOOLS } from "../tools/catalogue/index.js";
import { formatCredits, priceOf } from "../tools/pricing.js";
import { listTools } from "../tools/routes/list.js";
import { getTool } from "../tools/routes/get.js";
import { jsonSchemasOf } from "../tools/views.js";
import { x402Settle, x402Verify } from "../payments/facilitator.js";
import { x402Supported } from "../payments/supported.js";
import { wellKnownX402 } from "../payments/discovery.js";
import { ERRORS, type ErrorCode } from "./errors.js";
import type { AnyRoute } from "./route.js";

/**
 * The OpenAPI 3.1 document, derived from the same route definitions and zod schemas that
 * validate requests, so it cannot drift from what the API does.
 */
type Json = Record<string, unknown>;

const schemaOf = (schema: z.ZodType, io: "input" | "output"): Json => {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Json;
  return rest;
};

const errorSchema = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["type", "code", "message", "request_id"],
      properties: {
        type: { type: "string" },
        code: { type: "string", enum: Object.keys(ERRORS) },
        message: { type: "string" },
        param: { type: "string", description: "The input field the error is about, as a dotted path." },
        request_id: { type: "string" },
      },
    },
  },
};

const rateLimitHeaders = {
  "RateLimit-Limit": { schema: { type: "integer" }, description: "Requests allowed per minute for the account's tier." },
  "RateLimit-Remaining": { schema: { type: "integer" } },
  "RateLimit-Reset": { schema: { type: "integer" }, description: "Seconds until a request slot frees." },
  "X-Request-Id": { schema: { type: "string" } },
};

function errorResponses(codes: ErrorCode[]): Json {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERRORS[code].status, [...(byStatus.get(ERRORS[code].status) ?? []), code]);
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => [
      String(status),
      { description: list.join(", "), content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } },
    ]),
  );
}

const AUTH_ERRORS: Record<string, ErrorCode[]> = {
  public: ["validation_failed", "invalid_json", "body_too_large", "body_too_deep", "rate_limited", "store_unavailable"],
  key: ["missing_api_key", "invalid_api_key", "api_key_revoked", "validation_failed", "invalid_json", "not_found", "rate_limited", "store_unavailable"],
  admin: ["missing_api_key", "invalid_api_key", "admin_required", "validation_failed", "not_found", "store_unavailable"],
};

/** The reference's groups, in the order /docs shows them. */
export const TAGS: { name: string; description: string }[] = [
  { name: "Tools", description: "The catalogue and tool calls: POST /v1/tools/{name} with a JSON body, paid with credits (x-api-key) or an x402 payment." },
  { name: "Payments", description: "x402 USDC micropayments: what is accepted, credit packs, plans, and sign-in with a paying wallet." },
  { name: "Account", description: "Sign-up, e-mail verification and the calling account." },
  { name: "Keys", description: "API keys: list, create, rotate, revoke. A full key is shown once." },
  { name: "Usage", description: "The account's ledger and its recent events." },
  { name: "Webhooks", description: "Signed HTTPS deliveries of account events (Pro tier and up)." },
  { name: "MCP", description: "Every tool over the Model Context Protocol (streamable HTTP, Starter tier and up)." },
  { name: "Admin", description: "Operator endpoints, with the ADMIN_API_KEY: accounts, platform webhooks, status incidents." },
  { name: "Operations", description: "Probes and machine-readable documents for operators and tooling." },
];

/** The group of an API path. */
export function tagOf(path: string): string {
  if (path.startsWith("/api/v1/admin/")) return "Admin";
  if (path.startsWith("/v1/tools")) return "Tools";
  if (path === "/mcp") return "MCP";
  if (path.startsWith("/x402/") || /^\/api\/v1\/(credits|plans|wallet)\//.test(path)) return "Payments";
  if (path.startsWith("/api/v1/keys")) return "Keys";
  if (path.startsWith("/api/v1/usage") || path.startsWith("/api/v1/events")) return "Usage";
  if (path.startsWith("/api/v1/webhooks")) return "Webhooks";
  if (path.startsWith("/api/v1/")) return "Account";
  return "Operations";
}

function operation(route: AnyRoute, tag: string): Json {
  const pathParams = [...route.path.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: "path", required: true, schema: { type: "string" } }));
  const query = route.query ? schemaOf(route.query, "input") : null;
  const queryParams = Object.entries((query?.properties ?? {}) as Record<string, Json>).map(([name, schema]) => ({
    name,
    in: "query",
    required: ((query?.required as string[]) ?? []).includes(name),
    schema,
  }));
  return {
    tags: [tag],
    summary: route.summary,
    operationId: `${route.method}${route.path.replace(/[/:]+(\w)/g, (_m, c: string) => c.toUpperCase()).replace(/[^A-Za-z0-9]/g, "")}` || route.method,
    ...(route.auth === "key" ? { security: [{ ApiKey: [] }] } : route.auth === "admin" ? { security: [{ AdminKey: [] }] } : { security: [] }),
    ...(pathParams.length + queryParams.length ? { parameters: [...pathParams, ...queryParams] } : {}),
    ...(route.body ? { requestBody: { required: true, content: { "application/json": { schema: schemaOf(route.body, "input") } } } } : {}),
    responses: {
      [String(route.successStatus ?? 200)]: {
        description: "Success",
        headers: route.auth === "key" ? rateLimitHeaders : { "X-Request-Id": rateLimitHeaders["X-Request-Id"] },
        content: { "application/json": { schema: route.response ? schemaOf(route.response, "output") : { type: "object" } } },
      },
      ...errorResponses(AUTH_ERRORS[route.auth]!),
    },
  };
}

export function buildOpenApi(config: Pick<Config, "publicBaseUrl" | "creditPriceAtomic">): Json {
  const paths: Record<string, Json> = {};
  const add = (prefix: string, route: AnyRoute) => {
    const path = `${prefix}${route.path === "/" ? "" : route.path.replace(/:(\w+)/g, "{$1}")}`;
    paths[path] = { ...paths[path], [route.method]: operation(route, tagOf(path)) };
  };
  for (const route of apiRoutes) add("/api/v1", route);
  for (const route of [listTools, getTool]) add("/v1/tools", route);
  add("/x402", x402Supported);
  add("/x402", x402Verify);
  add("/x402", x402Settle);
  add("/.well-known", wellKnownX402);

  for (const tool of TOOLS) {
    const { input, output } = jsonSchemasOf(tool);
    const price = priceOf(tool, config.creditPriceAtomic);
    const { $schema: _i, ...inputSchema } = input as Json;
    const { $schema: _o, ...outputSchema } = output as Json;
    paths[`/v1/tools/${tool.name}`] = {
      post: {
        tags: ["Tools"],
        operationId: `callTool_${tool.name.replace(/-/g, "_")}`,
        summary: tool.title,
        description: `${tool.description}\n\nPrice: ${formatCredits(price.credits)} ($${price.usd}) per successful call; failed calls are refunded.${tool.aliases.length ? ` Aliases: ${tool.aliases.join(", ")}.` : ""}`,
        "x-price": price,
        security: [{ ApiKey: [] }, {}],
        parameters: [
          { name: "Idempotency-Key", in: "header", required: false, schema: { type: "string", maxLength: 255 }, description: "Same key and body: the stored answer is replayed, charged once." },
          { name: "X-PAYMENT", in: "header", required: false, schema: { type: "string" }, description: "x402 v1 payment (base64 JSON), instead of an API key." },
          { name: "PAYMENT-SIGNATURE", in: "header", required: false, schema: { type: "string" }, description: "x402 v2 payment (base64 JSON), instead of an API key." },
        ],
        requestBody: { required: true, content: { "application/json": { schema: inputSchema } } },
        responses: {
          "200": {
            description: "The tool's result.",
            headers: {
              ...rateLimitHeaders,
              "X-Credits-Charged": { schema: { type: "integer" } },
              "X-Credits-Remaining": { schema: { type: "integer" } },
              "Idempotent-Replayed": { schema: { type: "string", enum: ["true"] } },
            },
            content: { "application/json": { schema: outputSchema } },
          },
          ...errorResponses([
            "missing_api_key",
            "invalid_api_key",
            "api_key_revoked",
            "insufficient_credits",
            "tool_not_found",
            "idempotency_conflict",
            "body_too_large",
            "body_too_deep",
            "validation_failed",
            "rate_limited",
            "tool_failed",
            "tool_unavailable",
            "worker_unavailable",
            "worker_pool_busy",
            "tool_timeout",
            "payment_required",
            "payment_invalid",
            "payment_already_used",
            "payment_pending",
          ]),
        },
      },
    };
  }

  const probe = (summary: string) => ({ get: { tags: ["Operations"], summary, security: [], responses: { "200": { description: "OK" }, "503": { description: "Not ready" } } } });
  paths["/mcp"] = {
    post: {
      tags: ["MCP"],
      summary: "MCP over streamable HTTP: every tool, on the same call path as REST (Starter tier and up).",
      description: "JSON-RPC messages of the Model Context Protocol (2025 and 2026-07-28 revisions). Send Accept: application/json, text/event-stream.",
      security: [{ ApiKey: [] }],
      requestBody: { required: true, content: { "application/json": { schema: { type: "object", description: "A JSON-RPC 2.0 message." } } } },
      responses: {
        "200": { description: "A JSON-RPC response, as JSON or an event stream." },
        "406": { description: "The Accept header does not allow both application/json and text/event-stream." },
        ...errorResponses(["missing_api_key", "invalid_api_key", "api_key_revoked", "feature_not_in_tier", "host_not_allowed", "rate_limited"]),
      },
    },
  };
  paths["/healthz"] = probe("The process is up.");
  paths["/readyz"] = probe("The process can reach its store.");
  paths["/openapi.json"] = { get: { tags: ["Operations"], summary: "This document.", security: [], responses: { "200": { description: "OpenAPI 3.1" } } } };

  return {
    openapi: "3.1.0",
    info: {
      title: "Toolgate API",
      version: "1.0.0",
      description: "AI-powered tools behind one API key (credits) or x402 USDC micropayments. Errors share one shape: {error: {type, code, message, param?, request_id}}.",
    },
    servers: [{ url: config.publicBaseUrl }],
    tags: TAGS,
    security: [{ ApiKey: [] }],
    paths,
    components: {
      securitySchemes: {
        ApiKey: { type: "apiKey", in: "header", name: "x-api-key", description: "Your API key, tg_live_…" },
        AdminKey: { type: "apiKey", in: "header", name: "x-api-key", description: "The operator's ADMIN_API_KEY." },
      },
      schemas: { Error: errorSchema },
    },
  };
}
