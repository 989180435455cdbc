import { z } from "zod";
import type { Door } from "../routes.js";
import { withoutDialect } from "../tools/views.js";
import { webhooksDocument } from "../webhooks/document.js";
import { ERRORS, type ErrorCode } from "./errors.js";
import { UNREADABLE_BODY } from "./json-body.js";
import type { AnyRoute, DocumentConfig } from "./route.js";
import { isDeprecatedPath } from "./versioning.js";

/**
 * The OpenAPI 3.1 document, derived from the route registry (src/routes.ts): the same route
 * definitions and zod schemas that validate requests, so it cannot drift from what the API does.
 */
export type Json = Record<string, unknown>;

/** A zod schema as the document's JSON Schema: what a request takes (input) or an answer is (output). */
export const schemaOf = (schema: z.ZodType, io: "input" | "output"): Json =>
  withoutDialect(z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Json);

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
        param: {
          type: "string",
          description: "The input field the error is about, as a dotted path.",
        },
        request_id: { type: "string" },
      },
    },
  },
};

/**
 * A 402 that offers payment (payments/offer.ts): the error, with the x402 v1 offer beside it
 * when the gateway takes x402 payments; the v2 offer is the PAYMENT-REQUIRED header.
 */
const paymentRequiredSchema = {
  allOf: [{ $ref: "#/components/schemas/Error" }],
  type: "object",
  properties: {
    x402Version: { const: 1 },
    accepts: {
      type: "array",
      description: "The x402 v1 payment requirements: one exact USDC payment per network.",
      items: {
        type: "object",
        required: [
          "scheme",
          "network",
          "maxAmountRequired",
          "resource",
          "payTo",
          "maxTimeoutSeconds",
          "asset",
        ],
        properties: {
          scheme: { type: "string", const: "exact" },
          network: { type: "string" },
          maxAmountRequired: { type: "string", description: "USDC atomic units." },
          resource: { type: "string" },
          description: { type: "string" },
          mimeType: { type: "string" },
          payTo: { type: "string" },
          maxTimeoutSeconds: { type: "integer" },
          asset: { type: "string" },
          extra: { type: "object", description: "The token's EIP-712 name and version." },
        },
      },
    },
  },
};

/**
 * A keyed operation's security: the key in `x-api-key`, or the same key as `Authorization: Bearer
 * tg_live_…` (read as x-api-key on every door, http/auth.ts `bearerKeyAsApiKey`). Alternatives.
 */
export const KEY_SECURITY: Json[] = [{ ApiKey: [] }, { BearerKey: [] }];

/** The codes whose 402 carries the x402 offer (`paymentChallenge`). */
const OFFER_CODES = new Set<ErrorCode>(["payment_required", "payment_invalid"]);

const paymentRequiredHeader = {
  "PAYMENT-REQUIRED": {
    schema: { type: "string" },
    description:
      "The x402 v2 offer (base64 JSON: x402Version 2, resource, accepts), when the gateway takes x402 payments.",
  },
};

/**
 * The window of the limiter that counted the request (an account's tier for a keyed request, the
 * per-address limit of requests without one, an endpoint's own limit): on every answer, errors
 * included (D12).
 */
export const rateLimitHeaders = {
  "RateLimit-Policy": {
    schema: { type: "string" },
    description:
      "The limit and its window in seconds, as <limit>;w=<seconds> (a tier's: <limit>;w=60).",
  },
  "RateLimit-Limit": {
    schema: { type: "integer" },
    description:
      "Requests allowed per window by the limiter that counted this request: the account's tier for a keyed request, the client address's limit for one without credentials, or an endpoint's own limit, whichever is nearest to refusing.",
  },
  "RateLimit-Remaining": { schema: { type: "integer" } },
  "RateLimit-Reset": {
    schema: { type: "integer" },
    description: "Seconds until a request slot frees.",
  },
  "X-Request-Id": { schema: { type: "string" } },
};

/** A 429's headers: when to come back, and the window that refused the request. */
export const rateLimitedHeaders = {
  "Retry-After": {
    schema: { type: "integer" },
    description: "Seconds to wait before retrying.",
  },
  ...rateLimitHeaders,
};

/** A 503's header: every code but `tool_unavailable` (no provider: retrying does not help) says when to retry. */
const unavailableHeaders = {
  "Retry-After": {
    schema: { type: "integer" },
    description:
      "Seconds to wait before retrying; absent on tool_unavailable, which a retry does not mend.",
  },
};

export function errorResponses(codes: ErrorCode[]): Json {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes)
    byStatus.set(ERRORS[code].status, [...(byStatus.get(ERRORS[code].status) ?? []), code]);
  return Object.fromEntries(
    [...byStatus].map(([status, list]) => {
      const offer = list.some((code) => OFFER_CODES.has(code));
      return [
        String(status),
        {
          description: list.join(", "),
          ...(offer ? { headers: paymentRequiredHeader } : {}),
          ...(status === 429 ? { headers: rateLimitedHeaders } : {}),
          ...(status === 503 ? { headers: unavailableHeaders } : {}),
          content: {
            "application/json": {
              schema: { $ref: `#/components/schemas/${offer ? "PaymentRequired" : "Error"}` },
            },
          },
        },
      ];
    }),
  );
}

const AUTH_ERRORS: Record<string, ErrorCode[]> = {
  public: [
    "validation_failed",
    "invalid_json",
    "body_too_large",
    "body_too_deep",
    "rate_limited",
    "store_unavailable",
  ],
  key: [
    "missing_api_key",
    "invalid_api_key",
    "api_key_revoked",
    "api_key_expired",
    "validation_failed",
    "invalid_json",
    "not_found",
    "rate_limited",
    "store_unavailable",
  ],
  admin: [
    "missing_api_key",
    "invalid_api_key",
    "admin_required",
    "validation_failed",
    "not_found",
    "rate_limited",
    "store_unavailable",
  ],
};

/** What a route with a JSON body may answer about the body: unreadable, or not what it takes. */
export const BODY_ERRORS: ErrorCode[] = [...UNREADABLE_BODY, "validation_failed"];

/** The reference's groups, in the order /docs shows them. */
export const TAGS: { name: string; description: string }[] = [
  {
    name: "Tools",
    description:
      "The catalogue and tool calls: POST /v1/tools/{name} with a JSON body, paid with credits (x-api-key) or an x402 payment; a Business account's own endpoints as private tools (/api/v1/custom-tools).",
  },
  {
    name: "Payments",
    description:
      "x402 USDC micropayments: what is accepted, credit packs, plans, and sign-in with a paying wallet.",
  },
  { name: "Account", description: "Sign-up, e-mail verification and the calling account." },
  {
    name: "Keys",
    description: "API keys: list, create, rotate, revoke. A full key is shown once.",
  },
  { name: "Usage", description: "The account's ledger and its recent events." },
  { name: "Webhooks", description: "Signed HTTPS deliveries of account events (Pro tier and up)." },
  {
    name: "MCP",
    description:
      "Every tool over the Model Context Protocol (streamable HTTP, Starter tier and up).",
  },
  {
    name: "Admin",
    description:
      "Operator endpoints, with the ADMIN_API_KEY: accounts, platform webhooks, status incidents.",
  },
  {
    name: "Operations",
    description:
      "Probes and machine-readable documents for operators and tooling, and the public pages: docs, llms.txt, changelog and status (HTML, RSS, JSON).",
  },
];

/** The group of an API path. */
export function tagOf(path: string): string {
  if (path.startsWith("/api/v1/admin/")) return "Admin";
  if (path.startsWith("/v1/tools") || path.startsWith("/api/v1/custom-tools")) return "Tools";
  if (path === "/mcp") return "MCP";
  if (path.startsWith("/x402/") || /^\/api\/v1\/(credits|plans|wallet)\//.test(path))
    return "Payments";
  if (path.startsWith("/api/v1/keys")) return "Keys";
  if (path.startsWith("/api/v1/usage") || path.startsWith("/api/v1/events")) return "Usage";
  if (path.startsWith("/api/v1/webhooks")) return "Webhooks";
  if (path.startsWith("/api/v1/")) return "Account";
  return "Operations";
}

function operation(route: AnyRoute, tag: string): Json {
  const pathParams = [...route.path.matchAll(/:(\w+)/g)].map((m) => ({
    name: m[1],
    in: "path",
    required: true,
    schema: { type: "string" },
  }));
  const query = route.query ? schemaOf(route.query, "input") : null;
  const queryParams = Object.entries((query?.properties ?? {}) as Record<string, Json>).map(
    ([name, schema]) => ({
      name,
      in: "query",
      required: ((query?.required as string[]) ?? []).includes(name),
      schema,
    }),
  );
  const success = {
    description: "Success",
    headers: {
      ...rateLimitHeaders,
      ...Object.fromEntries(
        Object.entries(route.alsoProduces?.headers ?? {}).map(([name, header]) => [
          name,
          { schema: { type: "string" }, ...header },
        ]),
      ),
      ...route.successHeaders,
    },
    content: route.produces
      ? { [route.produces]: { schema: { type: "string" } } }
      : {
          "application/json": {
            schema: route.response ? schemaOf(route.response, "output") : { type: "object" },
          },
          ...(route.alsoProduces
            ? { [route.alsoProduces.mediaType]: { schema: { type: "string" } } }
            : {}),
        },
  };
  return {
    tags: [tag],
    summary: route.summary,
    operationId:
      `${route.method}${route.path.replace(/[/:]+(\w)/g, (_m, c: string) => c.toUpperCase()).replace(/[^A-Za-z0-9]/g, "")}` ||
      route.method,
    security:
      route.security ??
      (route.auth === "key" ? KEY_SECURITY : route.auth === "admin" ? [{ AdminKey: [] }] : []),
    ...(pathParams.length + queryParams.length + (route.requestHeaders?.length ?? 0)
      ? { parameters: [...pathParams, ...queryParams, ...(route.requestHeaders ?? [])] }
      : {}),
    ...(route.body
      ? {
          requestBody: {
            // No body is taken as `{}` (route.ts): required only when `{}` is refused.
            required: !route.body.safeParse({}).success,
            content: { "application/json": { schema: schemaOf(route.body, "input") } },
          },
        }
      : {}),
    responses: {
      [String(route.successStatus ?? 200)]: success,
      ...(route.alsoSucceeds
        ? {
            [String(route.alsoSucceeds.status)]: {
              ...success,
              description: route.alsoSucceeds.description,
            },
          }
        : {}),
      ...errorResponses([
        ...new Set([
          ...AUTH_ERRORS[route.auth]!,
          ...(route.body ? BODY_ERRORS : []),
          ...(route.errors ?? []),
          ...(route.unrestrictedKey ? (["unrestricted_key_required"] as const) : []),
        ]),
      ]),
      ...Object.fromEntries(
        Object.entries(route.otherAnswers ?? {}).map(([status, answer]) => [
          status,
          {
            description: answer.description,
            headers: rateLimitHeaders,
            content: { "application/json": { schema: schemaOf(answer.body, "output") } },
          },
        ]),
      ),
    },
  };
}

const HTTP_METHODS = new Set(["get", "put", "post", "delete", "options", "head", "patch", "trace"]);

/**
 * Every operation under a deprecated version's prefixes (API_VERSIONS) is `deprecated: true`, so
 * a generated client can warn as the answers' Deprecation and Sunset headers do (versioning.ts).
 * Added last, to operations only: with no version deprecated the document is unchanged.
 */
function markDeprecated(paths: Record<string, Json>, versions: DocumentConfig["apiVersions"]) {
  for (const [path, item] of Object.entries(paths)) {
    if (!isDeprecatedPath(versions, path)) continue;
    for (const method in item)
      if (HTTP_METHODS.has(method)) item[method] = { ...(item[method] as Json), deprecated: true };
  }
}

export function buildOpenApi(config: DocumentConfig, doors: Door[]): Json {
  const paths: Record<string, Json> = {};
  const merge = (more: Record<string, Json>) => {
    for (const [path, operations] of Object.entries(more))
      paths[path] = { ...paths[path], ...operations };
  };
  for (const door of doors) {
    if ("router" in door) {
      if (door.document) merge(door.document(config));
      continue;
    }
    for (const route of door.routes) {
      if (route.document) {
        merge(route.document(config));
        continue;
      }
      const path =
        `${door.prefix}${route.path === "/" ? "" : route.path.replace(/:(\w+)/g, "{$1}")}` || "/";
      merge({ [path]: { [route.method]: operation(route, tagOf(path)) } });
    }
  }
  markDeprecated(paths, config.apiVersions);

  return {
    openapi: "3.1.0",
    info: {
      title: "Toolgate API",
      version: "1.0.0",
      description:
        "AI-powered tools behind one API key (credits) or x402 USDC micropayments. Errors share one shape: {error: {type, code, message, param?, request_id}}.",
    },
    servers: [{ url: config.publicBaseUrl }],
    tags: TAGS,
    security: KEY_SECURITY,
    paths,
    webhooks: webhooksDocument(),
    components: {
      securitySchemes: {
        ApiKey: {
          type: "apiKey",
          in: "header",
          name: "x-api-key",
          description: "Your API key, tg_live_…",
        },
        BearerKey: {
          type: "http",
          scheme: "bearer",
          description:
            "Your API key sent as Authorization: Bearer tg_live_…, wherever x-api-key takes it (an x-api-key header, when present, is used instead).",
        },
        AdminKey: {
          type: "apiKey",
          in: "header",
          name: "x-api-key",
          description: "The operator's ADMIN_API_KEY.",
        },
        MetricsToken: {
          type: "http",
          scheme: "bearer",
          description:
            "GET /metrics only: the operator's METRICS_TOKEN as Authorization: Bearer <token>, required when the gateway sets METRICS_TOKEN (401 metrics_token_required without it); when it is not set, /metrics takes no credentials.",
        },
      },
      schemas: { Error: errorSchema, PaymentRequired: paymentRequiredSchema },
    },
  };
}
