import { authenticateKey } from "../../http/auth.js";
import { defineRoute } from "../../http/route.js";
import { toolNotFound } from "../lookup.js";
import { toolView, toolViewSchema } from "../views.js";

export const getTool = defineRoute({
  method: "get",
  path: "/:name",
  summary:
    "One tool, by name or alias. Public; with an x-api-key, also one of the account's own custom tools.",
  auth: "public",
  errors: ["tool_not_found"],
  response: toolViewSchema,
  async handler({ services, params, req, res, requestId }) {
    let tool = services.upstream.findPublic(params.name!) ?? null;
    let own = false;
    if (!tool && req.get("x-api-key")) {
      const caller = await authenticateKey(services, req, res, requestId);
      tool = await services.upstream.find(params.name!, caller.account.id);
      own = tool !== null;
    }
    if (!tool) throw toolNotFound(params.name!);
    return {
      body: {
        ...toolView(
          tool,
          services.config.creditPriceAtomic,
          services.pools.unavailableReason(tool.name),
        ),
        ...(own ? { private: true } : {}),
      },
    };
  },
});
