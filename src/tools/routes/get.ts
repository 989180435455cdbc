import { authenticateKey } from "../../http/auth.js";
import { ApiError } from "../../http/errors.js";
import { defineRoute } from "../../http/route.js";
import { toolView, toolViewSchema } from "../views.js";

export const getTool = defineRoute({
  method: "get",
  path: "/:name",
  summary: "One tool, by name or alias. Public; with an x-api-key, also one of the account's own custom tools.",
  auth: "public",
  response: toolViewSchema,
  async handler({ services, params, req, res, requestId }) {
    let tool = services.upstream.findPublic(params.name!) ?? null;
    let own = false;
    if (!tool && req.get("x-api-key")) {
      const caller = await authenticateKey(services, req, res, requestId);
      tool = await services.upstream.find(params.name!, caller.account.id);
      own = tool !== null;
    }
    if (!tool) throw new ApiError("tool_not_found", `No tool named ${params.name}. GET /v1/tools lists them.`);
    return { body: { ...toolView(tool, services.config.creditPriceAtomic, services.pools.unavailableReason(tool.name)), ...(own ? { private: true } : {}) } };
  },
});

