import { defineRoute } from "../../http/route.js";
import { TOOLS } from "../catalogue/index.js";
import { z } from "zod";
import { toolView, toolViewSchema } from "../views.js";

export const listTools = defineRoute({
  method: "get",
  path: "/",
  summary: "The tool catalogue: every tool with its price, availability and input/output JSON Schemas. Public.",
  auth: "public",
  response: z.object({ object: z.literal("list"), data: z.array(toolViewSchema) }),
  async handler({ services }) {
    const data = TOOLS.map((tool) => toolView(tool, services.config.creditPriceAtomic, services.pools.unavailableReason(tool.name)));
    return { body: { object: "list", data } };
  },
});
