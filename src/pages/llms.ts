import type { Config } from "../config.js";
import type { ToolDefinition } from "../tools/definition.js";
import { priceOf } from "../tools/pricing.js";

/** /llms.txt: a plain-text guide for language models (the llmstxt.org shape: title, summary, sections of links). */
/**
 * `tools`: every public tool, the catalogue's and the operator's (TOOLS_FILE). `x402Networks`: the
 * networks this gateway takes x402 payments on, null when it takes none — then the guide says a
 * key is needed, where it told a model to pay and the model was refused 401 `missing_api_key`.
 */
export function renderLlmsTxt(
  config: Pick<Config, "publicBaseUrl" | "creditPriceAtomic">,
  publicTools: readonly ToolDefinition[],
  x402Networks: readonly string[] | null,
): string {
  const base = config.publicBaseUrl;
  const paid = x402Networks !== null && x402Networks.length > 0;
  const howToPay = paid
    ? `Pay with an API key (credits) or, with no key at all, with an x402 USDC micropayment (networks: ${x402Networks.join(", ")}; every paid resource is listed at ${base}/.well-known/x402).`
    : "Pay with an API key (credits); this gateway takes no x402 payments.";
  const withoutKey = paid
    ? "- Without a key: the call answers 402 with an x402 offer (the v1 JSON body and the v2 `PAYMENT-REQUIRED` header). Sign the EIP-3009 authorization it describes and retry with `X-PAYMENT` (v1) or `PAYMENT-SIGNATURE` (v2). Every price is exact; a failed call leaves the payment as credits for the paying wallet."
    : "- Without a key: refused, 401 `missing_api_key`: this gateway takes no x402 payments.";
  const mcpWithoutKey = paid
    ? ' Without a key, a `tools/call` is answered with an `isError` result carrying the x402 offer (`x402/error`): retry it with the v2 payment in `params._meta["x402/payment"]`.'
    : "";
  const tools = publicTools.map((tool) => {
    const price = priceOf(tool, config.creditPriceAtomic);
    return `- [${tool.name}](${base}/docs#tool-${tool.name}): ${tool.description} ${price.credits} credit${price.credits === 1 ? "" : "s"} ($${price.usd}).`;
  });
  return `# Toolgate

> Toolgate is a tool-invocation gateway: a catalogue of AI-powered tools, each called with \`POST ${base}/v1/tools/{name}\` and a JSON body. ${howToPay}

## How to call a tool

- With a key: send \`x-api-key: <key>\` and \`content-type: application/json\`; the body is the tool's input. Sign up with \`POST ${base}/api/v1/signup {"email": "…"}\` to get a key and 25 free credits at once.
${withoutKey}
- Over MCP: \`${base}/mcp\` (streamable HTTP) with the same \`x-api-key\` header exposes every tool (Starter tier and up).${mcpWithoutKey}
- Errors have one shape: \`{"error": {"type", "code", "message", "param"?, "request_id"}}\`; 422 \`validation_failed\` names the failing field in \`param\`. Failed calls are refunded.
- One credit costs $${priceOf({ cost: 1 }, config.creditPriceAtomic).usd}.

## Tools

${tools.join("\n")}

## Reference

- [API reference](${base}/docs): every endpoint, with examples.
- [OpenAPI 3.1](${base}/openapi.json): machine-readable.
- [Tool catalogue](${base}/v1/tools): JSON, with each tool's input and output JSON Schema and price.
- [Changelog](${base}/changelog) ([RSS](${base}/changelog.rss)) and [status](${base}/status) ([JSON](${base}/status.json)).
`;
}
