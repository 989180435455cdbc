import type { Json } from "../../http/openapi.js";
import { BODY_ERRORS, KEY_SECURITY, errorResponses, rateLimitHeaders } from "../../http/openapi.js";
import type { DocumentConfig } from "../../http/route.js";
import { TOOLS } from "../catalogue/index.js";
import { formatCredits, priceOf } from "../pricing.js";
import { jsonSchemasOf, withoutDialect } from "../views.js";
import { describedTool } from "../custom/spec.js";
import { idempotencyKeyParameter } from "../../http/idempotency-key.js";
import {
  paymentHeaderParameters,
  paymentReceiptHeaders,
} from "../../payments/paid-answer-document.js";

/**
 * How `POST /v1/tools/{name}` appears in the OpenAPI document: one operation per tool, with the
 * tool's own input and output schemas and price, so client generators get a typed method each.
 */
export function callToolDocument(config: DocumentConfig): Record<string, Json> {
  const entries = [...TOOLS, ...(config.upstream?.tools ?? []).map(describedTool)].map((tool) => {
    const { input, output } = jsonSchemasOf(tool);
    const price = priceOf(tool, config.creditPriceAtomic);
    const [inputSchema, outputSchema] = [withoutDialect(input), withoutDialect(output)];
    return [
      `/v1/tools/${tool.name}`,
      {
        post: {
          tags: ["Tools"],
          operationId: `callTool_${tool.name.replace(/-/g, "_")}`,
          summary: tool.title,
          description: `${tool.description}\n\nPrice: ${formatCredits(price.credits)} ($${price.usd}) per successful call; failed calls are refunded.${tool.aliases.length ? ` Aliases: ${tool.aliases.join(", ")} (also callable as ${tool.aliases.map((alias) => `POST /v1/tools/${alias}`).join(", ")}).` : ""}`,
          "x-price": price,
          ...(tool.aliases.length ? { "x-aliases": [...tool.aliases] } : {}),
          security: [...KEY_SECURITY, {}],
          parameters: [
            idempotencyKeyParameter(
              "Same key and body: the stored answer is replayed, charged once.",
            ),
            ...paymentHeaderParameters("instead of an API key"),
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
                "Server-Timing": {
                  schema: { type: "string" },
                  description:
                    "Where the call's time went, in milliseconds: `tool` (the tool's worker), `payment` (an x402 payment verified, settled on chain and credited) and `gateway` (the rest); a replay has `gateway` alone.",
                },
                ...paymentReceiptHeaders("A call paid with x402"),
              },
              content: { "application/json": { schema: outputSchema } },
            },
            ...errorResponses([
              "missing_api_key",
              "invalid_api_key",
              "api_key_revoked",
              "api_key_expired",
              "insufficient_credits",
              "tool_not_allowed",
              "key_budget_exceeded",
              "tool_not_found",
              "idempotency_conflict",
              "idempotency_answer_not_kept",
              ...BODY_ERRORS,
              "rate_limited",
              "tool_failed",
              "tool_unavailable",
              "worker_unavailable",
              "worker_pool_busy",
              "shutting_down",
              "tool_timeout",
              "payment_required",
              "payment_invalid",
              "payment_already_used",
              "payment_pending",
              "chain_unavailable",
              "store_unavailable",
            ]),
          },
        },
      },
    ] as const;
  });
  return Object.fromEntries(entries);
}
