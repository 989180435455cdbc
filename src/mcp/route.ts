import type { IncomingMessage, ServerResponse } from "node:http";
import type { Router, NextFunction, Request, RequestHandler, Response } from "express";
import { TIERS, requireFeature } from "../accounts/tiers.js";
import { admitted, presentedKey, rateLimitHeaders } from "../http/auth.js";
import { ApiError, toApiError } from "../http/errors.js";
import { countAnonymously } from "../http/anonymous-limit.js";
import { countedAddress } from "../http/client-address.js";
import { showWindow } from "../http/endpoint-limits.js";
import { NOT_UNICODE, UNREADABLE_BODY, jsonBody } from "../http/json-body.js";
import { requireJsonBody } from "../http/request-context.js";
import { putHeaders } from "../http/reply-headers.js";
import { allowOn } from "../http/method-not-allowed.js";
import { KEY_SECURITY, errorResponses, type Json } from "../http/openapi.js";
import type { Services } from "../services.js";
import { MAX_BATCH_MESSAGES, checkBatch } from "./batches.js";
import type { McpCaller } from "./server.js";
import { caseSensitiveRouter } from "../http/router.js";

/**
 * `/mcp` over streamable HTTP (MCP SDK v2), serving 2026-07-28 clients and, statelessly,
 * 2025-era clients. Before MCP runs: the Host header (DNS-rebinding protection), the key (401)
 * and the tier (403 `feature_not_in_tier`), answered in the API's one error shape; the rate
 * limit too, except for a lone tools/call, which MCP answers as an error result.
 * Clients must send `Accept: application/json, text/event-stream` (the SDK answers 406 otherwise).
 */
export function mcpRouter(services: Services): Router {
  const allowedHosts = new Set(services.config.mcpAllowedHosts);
  // The MCP SDK is loaded on the first /mcp request, not at start-up: it is a large share of the
  // gateway's start-up time, and a gateway that serves only REST never needs it.
  let serving: Promise<
    (req: IncomingMessage, res: ServerResponse, body: unknown) => Promise<void>
  > | null = null;
  const loadMcp = async () => {
    const [{ createMcpHandler }, { toNodeHandler }, { createMcpServerFactory }] = await Promise.all(
      [
        import("@modelcontextprotocol/server"),
        import("@modelcontextprotocol/node"),
        import("./server.js"),
      ],
    );
    const factory = createMcpServerFactory(services, services.pools.http);
    const handler = createMcpHandler(
      ({ authInfo }) => factory(authInfo!.extra as unknown as McpCaller),
      {
        legacy: "stateless",
        maxRequestBodySize: services.config.bodyLimitBytes,
        onerror: (err) => services.log.warn({ err: err.message }, "MCP request rejected"),
      },
    );
    return toNodeHandler(handler, { maxRequestBodySize: services.config.bodyLimitBytes });
  };

  const guard: RequestHandler = async (req, res, next) => {
    res.locals.route = "/mcp";
    try {
      const host = (req.get("host") ?? "").toLowerCase().replace(/:\d+$/, "");
      if (!allowedHosts.has(host))
        throw new ApiError("host_not_allowed", "This host name is not served here.");
      // No key and x402 on: an agent with a wallet. It may list tools and pay per call
      // (`_meta["x402/payment"]`); its messages count against its client address, like signup's,
      // each message of a batch once (as for keyed callers below): the whole batch is admitted or
      // refused in one step (one round trip), and a refused batch counts nothing.
      if (!req.get("x-api-key") && services.payments) {
        // Without a key, it is counted per client address too, whatever else it carries (here,
        // not before the router: http/anonymous-limit.ts is told so in app.ts).
        try {
          await countAnonymously(services, req, res);
        } catch (err) {
          if (!refusedAsToolResult(req, res, err)) throw err;
          return pass(req, next, "", { key: null, refused: err as ApiError });
        }
        const limit = TIERS.free.requestsPerMinute;
        const messages = Array.isArray(req.body) ? Math.max(1, req.body.length) : 1;
        // A batch larger than the whole window would never fit in it: a 429 would send the client
        // back after Retry-After, forever. It is refused as a batch the door does not serve, like
        // one past the SDK's cap (batches.ts), counted only by the anonymous limit above.
        if (messages > limit) {
          refuseBatch(
            res,
            `Invalid Request: Batch must not exceed ${limit} messages without an API key (at most ${limit} MCP messages a minute per client address)`,
          );
          return;
        }
        const hit = await services.store.hitRateLimit(
          `mcp:${countedAddress(req.ip)}`,
          limit,
          60_000,
          String(res.locals.requestId),
          messages,
        );
        const headers = rateLimitHeaders(hit);
        if (!hit.allowed) {
          const retryAfter = String(Math.max(1, Math.ceil(hit.resetMs / 1000)));
          const limited = new ApiError(
            "rate_limited",
            `At most ${limit} MCP requests per minute from one address without an API key; retry after ${retryAfter} s.`,
            { headers: { ...headers, "Retry-After": retryAfter } },
          );
          if (!refusedAsToolResult(req, res, limited)) throw limited;
          return pass(req, next, "", { key: null, refused: limited });
        }
        showWindow(res, headers);
        return pass(req, next, "", { key: null });
      }
      const key = presentedKey(req);
      // Every JSON-RPC message counts once against the rate limit, here, before the SDK parses it:
      // a batch counts each message (all or none admitted), and tools/call, unknown tools and
      // malformed or unanswerable messages count like any other. The invocation service then
      // charges a call without counting it again.
      const requests = Array.isArray(req.body) ? Math.max(1, req.body.length) : 1;
      let caller;
      try {
        const outcome = await services.store.admit({
          accountId: key.accountId,
          keyHash: key.hash,
          cost: 0,
          requestId: String(res.locals.requestId),
          tool: null,
          reason: "",
          requests,
        });
        // A tier without MCP is refused it (403) before anything else the admission says, a
        // rate limit included: retrying later would not help. Its batch counted one request, in
        // the account's window, which the 403 shows: so no other limiter counts it again.
        if ("account" in outcome && outcome.account) {
          try {
            requireFeature(outcome.account.tier, "mcp");
          } catch (err) {
            throw (err as ApiError).withHeaders(rateLimitHeaders(outcome.rate));
          }
        }
        caller = admitted(outcome);
      } catch (err) {
        if (!refusedAsToolResult(req, res, err)) throw err;
        res.locals.accountId = key.accountId;
        return pass(req, next, key.accountId, { key, refused: err as ApiError });
      }
      for (const [name, value] of Object.entries(caller.headers)) res.setHeader(name, value);
      res.locals.accountId = caller.account.id;
      pass(req, next, caller.account.id, {
        key: { ...key, id: caller.keyId, limited: caller.keyLimited, tier: caller.account.tier },
      });
    } catch (err) {
      next(err);
    }
  };

  const router = caseSensitiveRouter();
  // Streamable HTTP sends messages with POST. The gateway is stateless: it opens no stream for GET
  // and keeps no session for DELETE to end, so those are 405 like any other method (the
  // transport's own rule: a server without the stream answers GET 405), with one Allow header.
  const handle: RequestHandler = async (req, res) => {
    const serve = await (serving ??= loadMcp().catch((err: unknown) => {
      serving = null; // tried again on the next request
      throw err;
    }));
    void serve(req, res, res.locals.mcpBody);
  };
  // A batch the SDK could not answer is refused before the guard counts it (batches.ts).
  const batchChecked: RequestHandler = (req, res, next) => {
    const batch = checkBatch(req.body);
    if ("refused" in batch) {
      refuseBatch(res, batch.refused);
      return;
    }
    res.locals.mcpBody = batch.body;
    next();
  };
  // The door reads its own body, so a body that cannot be read is answered as JSON-RPC, which an
  // MCP client can read: -32700 for JSON that does not parse, -32600 for any other unreadable body.
  const json = jsonBody({
    limitBytes: services.config.bodyLimitBytes,
    maxDepth: services.config.bodyMaxDepth,
  });
  router.route("/").post(requireJsonBody, json, batchChecked, guard, handle);
  allowOn(router, "/", ["POST"]);
  router.use(jsonRpcBodyErrors);
  return router;
}

/** A batch the door does not serve, refused whole before anything of it runs: -32600, 400. */
function refuseBatch(res: Response, message: string): void {
  res.status(400).json({ jsonrpc: "2.0", error: { code: -32600, message }, id: null });
}

/** A body that cannot be read, answered as a JSON-RPC error with the same HTTP status. */
const UNREADABLE = new Set<string>(UNREADABLE_BODY);
function jsonRpcBodyErrors(err: unknown, _req: Request, res: Response, next: NextFunction): void {
  const api = toApiError(err);
  // A string that is not Unicode (json-body.ts) is the body's too: no JSON-RPC request to answer.
  const notUnicode = (err as { type?: string } | null)?.type === NOT_UNICODE;
  if (!UNREADABLE.has(api.code) && !notUnicode) {
    next(err);
    return;
  }
  res.status(api.status).json({
    jsonrpc: "2.0",
    error: { code: api.code === "invalid_json" ? -32700 : -32600, message: api.message },
    id: null,
  });
}

/** A JSON-RPC 2.0 error object. */
const JSON_RPC_ERROR_OBJECT: Json = {
  type: "object",
  required: ["code", "message"],
  properties: { code: { type: "integer" }, message: { type: "string" } },
};

/** A JSON-RPC 2.0 error answer with no request id, as the door and the MCP SDK send them. */
const JSON_RPC_ERROR: Json = {
  type: "object",
  required: ["jsonrpc", "error", "id"],
  properties: { jsonrpc: { const: "2.0" }, error: JSON_RPC_ERROR_OBJECT, id: { type: "null" } },
};

/**
 * One JSON-RPC 2.0 message a client sends: a request (`method` and `id`), a notification
 * (`method`, no `id`) or its response to a server's request (`id`, with `result` or `error`).
 */
const JSON_RPC_MESSAGE: Json = {
  type: "object",
  required: ["jsonrpc"],
  description:
    "A JSON-RPC 2.0 message: a request (method and id), a notification (method, no id), or a response to a server's request (id, with result or error).",
  properties: {
    jsonrpc: { const: "2.0" },
    id: { type: ["string", "integer"] },
    method: { type: "string" },
    params: { type: "object", additionalProperties: true },
    result: { type: "object", additionalProperties: true },
    error: JSON_RPC_ERROR_OBJECT,
  },
};

/** How `/mcp` appears in the OpenAPI document (its messages are JSON-RPC, described by MCP itself). */
export const mcpDocument = (): Record<string, Json> => ({
  "/mcp": {
    post: {
      tags: ["MCP"],
      operationId: "postMcp",
      summary:
        "MCP over streamable HTTP: every tool, on the same call path as REST (Starter tier and up).",
      description:
        "JSON-RPC messages of the Model Context Protocol (2025 and 2026-07-28 revisions). Send Accept: application/json, text/event-stream.",
      // A key, or none: with x402 on, an agent with a wallet lists the tools and pays per call
      // (the guard above), as on the REST tool routes.
      security: [...KEY_SECURITY, {}],
      requestBody: {
        required: true,
        content: {
          "application/json": {
            // A batch is served too (batches.ts), up to the SDK's own cap.
            schema: {
              oneOf: [
                JSON_RPC_MESSAGE,
                {
                  type: "array",
                  description: "A JSON-RPC batch: several messages in one POST.",
                  items: JSON_RPC_MESSAGE,
                  minItems: 1,
                  maxItems: MAX_BATCH_MESSAGES,
                },
              ],
            },
          },
        },
      },
      responses: {
        "200": { description: "A JSON-RPC response, as JSON or an event stream." },
        "202": { description: "A notification or a response was accepted; no body." },
        // Answered as JSON-RPC, which an MCP client reads (jsonRpcBodyErrors), not the Error shape.
        ...Object.fromEntries(
          [
            [
              "400",
              `The body is not JSON (-32700), cannot be read, or is not a valid JSON-RPC message or batch (-32600; a batch must not repeat a request id, nor, without an API key, hold more than ${TIERS.free.requestsPerMinute} messages).`,
            ],
            [
              "406",
              "The Accept header does not allow both application/json and text/event-stream.",
            ],
            ["413", "The body is too large or nests too deeply (-32600)."],
            ["415", "The body is not sent as application/json (-32600)."],
            ["422", "The body is not Unicode text: a string escapes a lone surrogate (-32600)."],
          ].map(([status, description]) => [
            status,
            { description, content: { "application/json": { schema: JSON_RPC_ERROR } } },
          ]),
        ),
        ...errorResponses([
          "missing_api_key",
          "invalid_api_key",
          "api_key_revoked",
          "api_key_expired",
          "feature_not_in_tier",
          "host_not_allowed",
          "rate_limited",
          "store_unavailable",
        ]),
      },
    },
  },
});

/** Hands the request to the MCP SDK with its caller (the SDK's `authInfo.extra`). */
function pass(req: Request, next: NextFunction, clientId: string, extra: McpCaller): void {
  (req as unknown as { auth: unknown }).auth = { token: "", clientId, scopes: [], extra };
  next();
}

/**
 * A lone `tools/call` over the rate limit is answered as a tool result (isError, the REST error
 * body in `content[0].text`): the official clients throw on an HTTP 429, and an agent reads a
 * result where it would only see a transport failure. The limit's headers (Retry-After,
 * RateLimit-*) stay on the HTTP answer. Anything else (a batch, a listing, a notification) is
 * refused with the 429 itself. Nothing was counted either way.
 */
function refusedAsToolResult(req: Request, res: Response, err: unknown): boolean {
  const body = req.body as { method?: unknown; id?: unknown } | null;
  const loneToolCall =
    body !== null &&
    typeof body === "object" &&
    !Array.isArray(body) &&
    body.method === "tools/call" &&
    body.id !== undefined;
  if (!loneToolCall || !(err instanceof ApiError) || err.code !== "rate_limited") return false;
  putHeaders(res, err.options.headers);
  return true;
}
