import { z } from "zod";
import { optionalKeyAccount } from "../../http/auth.js";
import { defineRoute } from "../../http/route.js";
import { TOOLS } from "../catalogue/index.js";
import { publicTools } from "../custom/registry.js";
import type { ToolDefinition } from "../definition.js";
import { FILTER_CATEGORIES } from "../definition.js";
import { searchTools } from "../search.js";
import { toolView, toolViewSchema } from "../views.js";

export const listTools = defineRoute({
  method: "get",
  path: "/",
  summary:
    "The tool catalogue: every tool with its price, availability and input/output JSON Schemas; `q` ranks by a text search over names, tags and descriptions, `category` filters. Public; with an x-api-key, the account's own custom tools are listed too (`private: true`, category `custom`) while its tier has custom endpoints.",
  auth: "public",
  // A key is optional, but one sent is checked: it lists the account's own tools too.
  errors: ["invalid_api_key", "api_key_revoked"],
  // Unknown parameters are refused (422), as on every listing: a misspelt filter is not the whole catalogue.
  query: z.strictObject({
    q: z.string().max(200).optional().describe("Words to search for; the best matches come first."),
    category: z
      .enum(FILTER_CATEGORIES)
      .optional()
      .describe(
        "Only tools of this category (GET /v1/tools/categories); `custom`: the account's own tools (none without a key).",
      ),
  }),
  response: z.object({ object: z.literal("list"), data: z.array(toolViewSchema) }),
  async handler({ services, query, req, res, requestId }) {
    // Only a valid key of the account shows its own tools (and counts as a request of that account),
    // and only while its tier has custom endpoints: they could not be called otherwise.
    const account = await optionalKeyAccount(services, req, res, requestId);
    const own: ToolDefinition[] = account
      ? await services.upstream.listPrivate(account.id, account.tier)
      : [];
    const all = [...publicTools(services, TOOLS), ...own];
    const tools = query.q || query.category ? searchTools(all, query.q ?? "", query.category) : all;
    const data = tools.map((tool) => ({
      ...toolView(
        tool,
        services.config.creditPriceAtomic,
        services.pools.unavailableReason(tool.name),
      ),
      ...(own.includes(tool) ? { private: true } : {}),
    }));
    return { body: { object: "list", data } };
  },
});
