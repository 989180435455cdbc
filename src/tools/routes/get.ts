import { optionalKeyAccount } from "../../http/auth.js";
import { isPrivateTool } from "../custom/registry.js";
import { defineRoute } from "../../http/route.js";
import { toolNotFound } from "../lookup.js";
import { toolView, toolViewSchema } from "../views.js";

export const getTool = defineRoute({
  method: "get",
  path: "/:name",
  summary:
    "One tool, by name or alias. Public; with an x-api-key, also one of the account's own custom tools.",
  auth: "public",
  // A key is optional, but one sent is checked, as by GET /v1/tools: a revoked or mistyped key
  // is 401 here too, not silently ignored for a public tool (and then 401 on the call).
  // An account's own tool while its tier has no custom endpoints is 403, as its call is.
  errors: ["tool_not_found", "invalid_api_key", "api_key_revoked", "feature_not_in_tier"],
  response: toolViewSchema,
  async handler({ services, params, req, res, requestId }) {
    const account = await optionalKeyAccount(services, req, res, requestId);
    const tool = await services.upstream.find(params.name!, account?.id ?? null);
    if (!tool) throw toolNotFound(params.name!);
    return {
      body: {
        ...toolView(
          tool,
          services.config.creditPriceAtomic,
          services.pools.unavailableReason(tool.name),
        ),
        ...(isPrivateTool(tool) ? { private: true } : {}),
      },
    };
  },
});
