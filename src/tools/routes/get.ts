import { defineRoute } from "../../http/route.js";
import { requireTool } from "../lookup.js";
import { toolView, toolViewSchema } from "../views.js";

export const getTool = defineRoute({
  method: "get",
  path: "/:name",
  summary: "One tool of the catalogue, by name or alias. Public.",
  auth: "public",
  response: toolViewSchema,
  async handler({ services, params }) {
    const tool = requireTool(params.name!);
    return { body: toolView(tool, services.config.creditPriceAtomic, services.pools.unavailableReason(tool.name)) };
  },
});
