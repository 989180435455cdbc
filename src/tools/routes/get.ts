import { ApiError } from "../../http/errors.js";
import { defineRoute } from "../../http/route.js";
import { findTool } from "../catalogue/index.js";
import { z } from "zod";
import { toolView, toolViewSchema } from "../views.js";

export const getTool = defineRoute({
  method: "get",
  path: "/:name",
  summary: "One tool of the catalogue, by name or alias. Public.",
  auth: "public",
  response: toolViewSchema,
  async handler({ services, params }) {
    const tool = findTool(params.name!);
    if (!tool) throw new ApiError("tool_not_found", `No tool named ${params.name}. GET /v1/tools lists them.`);
    return { body: toolView(tool, services.config.creditPriceAtomic, services.pools.unavailableReason(tool.name)) };
  },
});
