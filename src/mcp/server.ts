import { z } from "zod";
import type { TierName } from "../accounts/tiers.js";
import { parseInput } from "../http/route.js";
import { FILTER_CATEGORIES } from "../tools/definition.js";
import { ApiError, errorBody, toApiError } from "../http/errors.js";
import { newRequestId } from "../lib/ids.js";
import type { Services } from "../services.js";
import { TOOLS } from "../tools/catalogue/index.js";
import { isPrivateTool, isUpstreamTool, publicTools } from "../tools/custom/registry.js";
import type { Forwarder } from "../tools/forward.js";
import { invokeTool } from "../tools/invoke.js";
import { atomicPrice } from "../lib/money.js";
import { formatCredits, priceOf } from "../tools/pricing.js";
import { offerFor, type Offer } from "../payments/offer.js";
import { mcpToolExtensions } from "../payments/discovery.js";
import type { Paid } from "../payments/take-payment.js";
import { readPaymentPayload } from "../payments/wire.js";
import type { ToolDefinition } from "../tools/definition.js";
import { toolNotFound } from "../tools/lookup.js";
import { callPaidTool } from "../tools/paid-call.js";
import { jsonSchemasOf, withoutDialect } from "../tools/views.js";
import { searchTools } from "../tools/search.js";
import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";
import { GatewayServer, ownHandler } from "./protocol-errors.js";
import { checkedIdempotencyKey } from "../http/idempotency-key.js";
import { jsonDepthExceeds } from "../http/json-body.js";

/**
 * The MCP door: a thin adapter from `tools/list` and `tools/call` onto the catalogue and the
 * one invocation service. Rate limits, validation, charging, refunds and events are the REST
 * door's, because they are the same code.
 */
export interface McpCaller {
  /**
   * null: no key — an agent paying per call with x402 (only when x402 is on). `id` and `limited`
   * come from the key's admission (absent when it was refused before MCP ran): a key with
   * controls may be limited to some tools, and is shown only those.
   */
  key: {
    accountId: string;
    hash: string;
    id?: string | null;
    limited?: boolean;
    /** The account's tier as its admission read it (absent when refused before): what it lists. */
    tier?: TierName;
  } | null;
  /** Set when the request was refused before MCP ran (a lone tools/call over the rate limit): the call answers this error. */
  refused?: ApiError;
}

/** The x402 MCP transport's `_meta` keys (x402 `specs/transports-v2/mcp.md`). */
const PAYMENT_META = "x402/payment";
/**
 * A keyed `tools/call`'s Idempotency-Key, as REST's header: a repeat with the same key and
 * arguments is answered the first call's stored answer, uncharged. MCP has no header of a call's
 * own (a batch shares one HTTP request), so it travels in the call's `_meta`.
 */
const IDEMPOTENCY_META = "toolgate/idempotency-key";
const IDEMPOTENCY_PARAM = `_meta["${IDEMPOTENCY_META}"]`;

/** A refusal naming REST's Idempotency-Key header names where MCP sends the key instead. */
const asMcpRefusal = (error: ApiError) =>
  error.options.param === "Idempotency-Key"
    ? new ApiError(error.code, error.message.replace("request body", "tool call"), {
        ...error.options,
        param: IDEMPOTENCY_PARAM,
      })
    : error;
const RECEIPT_META = "x402/payment-response";

/**
 * What MCP's tool annotations say of a catalogue tool: it computes an answer and changes nothing
 * (read-only); it reaches outside the gateway (open world) when it reads the web or asks a
 * third-party provider. An endpoint's tool (an operator's or an account's) may do anything, so
 * it says nothing and clients assume the worst, as the specification's defaults do.
 */
function annotationsOf(tool: ToolDefinition) {
  if (isUpstreamTool(tool)) return {};
  return {
    annotations: {
      readOnlyHint: true,
      openWorldHint: tool.pool === "provider" || tool.category === "web",
    },
  };
}

/** A tool as MCP lists it. */
function mcpTool(services: Services, tool: ToolDefinition) {
  const { input, output } = jsonSchemasOf(tool);
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: withoutDialect(input) as { type: "object"; [k: string]: unknown },
    outputSchema: withoutDialect(output) as { type: "object"; [k: string]: unknown },
    ...annotationsOf(tool),
    _meta: {
      "toolgate/price": priceOf(tool, services.config.creditPriceAtomic),
      "toolgate/aliases": tool.aliases,
    },
  };
}

/** Computed once: the public tools (catalogue and operator's) do not change while the process runs. */
function toolList(services: Services) {
  return publicTools(services, TOOLS).map((tool) => mcpTool(services, tool));
}

/**
 * `search_tools`: a free tool that finds catalogue tools by words (and category) and returns
 * them with their schemas, so an agent can start from a small tool list (tool search). Its
 * arguments are held to the schema it lists, as every tool's are: a mistyped category is an
 * error, not an empty list.
 */
const searchToolsInput = z.strictObject({
  query: z.string().max(200).describe("Words describing the task, e.g. 'extract text from pdf'."),
  category: z
    .enum(FILTER_CATEGORIES)
    .optional()
    .describe("Only tools of this category; `custom`: the account's own tools."),
  limit: z.number().int().min(1).max(64).default(5).describe("How many tools to return."),
});
const SEARCH_TOOLS = {
  name: "search_tools",
  title: "Search the tools",
  description:
    "Find tools of this gateway by what they do: returns the best-matching tools with their input and output schemas and prices. Free.",
  inputSchema: withoutDialect(z.toJSONSchema(searchToolsInput, { io: "input" })) as {
    type: "object";
    [k: string]: unknown;
  },
  // Its structured result, for clients that check it against the schema (the official SDK does).
  outputSchema: {
    type: "object" as const,
    properties: {
      tools: {
        type: "array",
        description:
          "The matching tools as tools/list shows them, each with `available` (whether it can be called now).",
        items: { type: "object" },
      },
    },
    required: ["tools"],
  },
  annotations: { readOnlyHint: true, openWorldHint: false },
};

function searchResult(
  services: Services,
  own: readonly ToolDefinition[],
  allowed: (name: string) => boolean,
  args: Record<string, unknown>,
  requestId: string,
) {
  let input: z.infer<typeof searchToolsInput>;
  try {
    input = parseInput(searchToolsInput, args, "body");
  } catch (err) {
    return errorResult(err as ApiError, requestId);
  }
  const found = searchTools(
    [...publicTools(services, TOOLS), ...own].filter((tool) => allowed(tool.name)),
    input.query,
    input.category,
  ).slice(0, input.limit);
  const matches = found.map((tool) => ({
    ...mcpTool(services, tool),
    available: services.pools.unavailableReason(tool.name) === null,
  }));
  return {
    content: [{ type: "text" as const, text: JSON.stringify({ tools: matches }) }],
    structuredContent: { tools: matches },
  };
}

/**
 * An error result: the REST error body (same stable code and shape) as JSON in `content[0].text`,
 * and no `structuredContent` — clients (the official 1.x SDK among them) validate
 * `structuredContent` against the tool's output schema even on an error, and an error body would
 * fail it, turning a readable error into a client-side exception.
 */
function errorResult(err: ApiError, requestId: string) {
  return {
    isError: true,
    content: [{ type: "text" as const, text: JSON.stringify(errorBody(err, requestId)) }],
  };
}

/**
 * "Pay to call this": the x402 MCP transport's payment-required result — `isError`, and in
 * `content[0].text` `{"x402/error":{"code":402,"message","data":<v2 PaymentRequired>}}`, the offer
 * for `mcp://tool/<name>`. No `structuredContent`, for the reason errorResult gives.
 */
function payableResult(err: ApiError, offer: Offer) {
  const data = {
    ...offer.v2,
    error: err.message,
    ...(err.options.details ? { details: err.options.details } : {}),
  };
  return {
    isError: true,
    content: [
      {
        type: "text" as const,
        text: JSON.stringify({ "x402/error": { code: 402, message: err.message, data } }),
      },
    ],
  };
}

/** A paid call of `tool` over MCP: the offer names the MCP resource; the payment is the `_meta` object as sent. */
function paidCall(
  services: Services,
  tool: ToolDefinition,
  input: unknown,
  payment: unknown,
  requestId: string,
) {
  const priceAtomic = atomicPrice(tool.cost, services.config.creditPriceAtomic);
  const offer = offerFor(
    services.payments!.config,
    priceAtomic,
    `mcp://tool/${tool.name}`,
    `${tool.title}: one call (${formatCredits(tool.cost)})`,
    [mcpToolExtensions()],
  );
  return {
    tool,
    input,
    offer,
    priceAtomic,
    read: () => (payment === undefined ? null : readPaymentPayload(2, payment)),
    idempotencyKey: null,
    requestId,
  };
}

/**
 * Why an answer cannot be written as a tool result (its `structuredContent`), or null. The SDK
 * writes the result with JSON.stringify after the handler returns, where a stack overflow (an
 * answer nested thousands of levels deep) was lost: the caller got an empty 200 and the charge
 * was kept. Asked before the charge is kept (ToolCall.unwritable), so such a call fails refunded.
 * An answer no deeper than a request body may be is written without doubt and costs one scan of
 * its bytes; a deeper one (a catalogue tool's, which REST serves as is) is tried.
 */
function unwritableAnswer(maxDepth: number) {
  return (body: Buffer): string | null => {
    if (!jsonDepthExceeds(body, maxDepth)) return null;
    try {
      // Inside a few levels more than the SDK's message adds around the result.
      JSON.stringify([[[[[[[[{ structuredContent: JSON.parse(body.toString("utf8")) }]]]]]]]]);
      return null;
    } catch (err) {
      return `the answer cannot be written as an MCP tool result: ${(err as Error).message}`;
    }
  };
}

export function createMcpServerFactory(services: Services, door: Forwarder) {
  const tools = toolList(services);
  const unwritable = unwritableAnswer(services.config.bodyMaxDepth);
  return (caller: McpCaller) => {
    const server = new GatewayServer(
      { name: "toolgate", version: "1.0.0" },
      { capabilities: { tools: {} } },
      (method, err) => services.log.error({ err, method }, "MCP request failed"),
    );
    // The caller's own custom tools: listed to its keys only (the guard has checked the key).
    const ownTools = async () =>
      caller.key ? await services.upstream.listPrivate(caller.key.accountId, caller.key.tier) : [];
    // A key limited to some tools (`allowed_tools`) is shown only those: an agent picks from what
    // it lists, and every other tool would be refused `tool_not_allowed`. One read, and only for
    // a key with controls; search_tools (free, and no tool of the catalogue) stays.
    const mayCall = async (): Promise<(name: string) => boolean> => {
      const key = caller.key;
      if (!key?.limited || !key.id) return () => true;
      const allowed = (await services.store.getKey(key.accountId, key.id))?.allowedTools ?? null;
      return allowed === null ? () => true : (name) => allowed.includes(name);
    };
    const listed = ownHandler(async () => {
      const [own, allowed] = await Promise.all([ownTools(), mayCall()]);
      return {
        tools: [
          SEARCH_TOOLS,
          ...[...tools, ...own.map((tool) => mcpTool(services, tool))].filter((t) =>
            allowed(t.name),
          ),
        ].map((t) =>
          "_meta" in t
            ? {
                ...t,
                _meta: {
                  ...(t._meta as Record<string, unknown>),
                  "toolgate/available": services.pools.unavailableReason(t.name) === null,
                },
              }
            : t,
        ),
      };
    });
    server.setRequestHandler("tools/list", (request, ctx) => {
      // The whole list is one page and no cursor is ever issued, so any cursor is one we did not
      // give: the caller's -32602 (MCP's pagination rule), not a first page served again.
      if (request.params?.cursor !== undefined)
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          "Invalid params for tools/list: unknown cursor (the list is one page; it issues none).",
        );
      return listed(request, ctx);
    });
    server.setRequestHandler(
      "tools/call",
      ownHandler(async (request) => {
        const requestId = newRequestId();
        if (caller.refused) return errorResult(caller.refused, requestId);
        if (request.params.name === SEARCH_TOOLS.name) {
          const [own, allowed] = await Promise.all([ownTools(), mayCall()]);
          return searchResult(services, own, allowed, request.params.arguments ?? {}, requestId);
        }
        let tool: ToolDefinition | null;
        try {
          tool = await services.upstream.find(request.params.name, caller.key?.accountId ?? null);
        } catch (err) {
          return errorResult(toApiError(err), requestId);
        }
        if (!tool) return errorResult(toolNotFound(request.params.name), requestId);
        const forward = services.upstream.forwarderFor(tool, door);
        const payable = services.payments !== null && !isPrivateTool(tool);
        const input = request.params.arguments ?? {};
        const meta = request.params._meta as Record<string, unknown> | undefined;
        const payment = meta?.[PAYMENT_META];
        let receipt: Paid["receipt"] | null = null;
        try {
          const result =
            payable && (caller.key === null || payment !== undefined)
              ? await callPaidTool(
                  services,
                  {
                    ...paidCall(services, tool, input, payment, requestId),
                    // A keyed caller's payment buys credits for the key's account, as on REST.
                    key: caller.key ?? undefined,
                    counted: true,
                    onPaid: (paid) => void (receipt = paid.receipt),
                    unwritable,
                  },
                  forward,
                )
              : await invokeTool(
                  services,
                  {
                    tool,
                    input,
                    key: caller.key!,
                    idempotencyKey: checkedIdempotencyKey(
                      meta?.[IDEMPOTENCY_META],
                      IDEMPOTENCY_PARAM,
                    ),
                    requestId,
                    counted: true,
                    unwritable,
                  },
                  forward,
                );
          return {
            content: [{ type: "text" as const, text: result.body }],
            structuredContent: JSON.parse(result.body) as Record<string, unknown>,
            ...(receipt ? { _meta: { [RECEIPT_META]: receipt } } : {}),
          };
        } catch (err) {
          const apiError = asMcpRefusal(toApiError(err));
          if (apiError.status >= 500 && apiError.code === "internal_error")
            services.log.error({ err, request_id: requestId }, "MCP tool call failed");
          // Not paid (yet): pay for this call — a keyed caller short of credits may too, like an agent without a key.
          if (
            !receipt &&
            payable &&
            (apiError.code === "insufficient_credits" ||
              apiError.options.headers?.["PAYMENT-REQUIRED"])
          ) {
            return payableResult(
              apiError,
              paidCall(services, tool, input, undefined, requestId).offer,
            );
          }
          const result = errorResult(apiError, requestId);
          // Once paid, the payment stands as credits on the wallet's account: the receipt says so.
          return receipt ? { ...result, _meta: { [RECEIPT_META]: receipt } } : result;
        }
      }),
    );
    return server;
  };
}
