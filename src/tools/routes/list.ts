import { z } from "zod";
import { defineRoute } from "../../http/route.js";
import { TOOLS } from "../catalogue/index.js";
import { CATEGORIES } from "../definition.js";
import { searchTools } from "../search.js";
import { toolView, toolViewSchema } from "../views.js";

export const listTools = defineRoute({
  method: "get",
  path: "/",
  summary: "The tool catalogue: every tool with its price, availability and input/output JSON Schemas; `q` ranks by a text search over names, tags and descriptions, `category` filters. Public.",
  auth: "public",
  query: z.object({
    q: z.string().max(200).optional().describe("Words to search for; the best matches come first."),
    category: z.enum(Object.keys(CATEGORIES) as [keyof typeof CATEGORIES]).optional().describe("Only tools of this category (GET /v1/tools/categories)."),
  }),
  response: z.object({ object: z.literal("list"), data: z.array(toolViewSchema) }),
  async handler({ services, query }) {
    const tools = query.q || query.category ? searchTools(TOOLS, query.q ?? "", query.category) : TOOLS;
    const data = tools.map((tool) => toolView(tool, services.config.creditPriceAtomic, services.pools.unavailableReason(tool.name)));
    return { body: { object: "list", data } };
  },
});
