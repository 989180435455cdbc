import { requireFeature } from "../../../accounts/tiers.js";
import { ApiError } from "../../../http/errors.js";
import { defineRoute } from "../../../http/route.js";
import { customToolView, customToolViewSchema } from "./view.js";

/** GET /api/v1/custom-tools/{name}: one of the account's own tools; another account's is not found. */
export const getCustomTool = defineRoute({
  method: "get",
  path: "/custom-tools/:name",
  summary: "One of the account's custom tools (Business tier).",
  auth: "key",
  errors: ["feature_not_in_tier"],
  response: customToolViewSchema,
  async handler({ services, caller, params }) {
    requireFeature(caller.account.tier, "custom_endpoints");
    const tool = await services.store.getCustomTool(caller.account.id, params.name!);
    if (!tool)
      throw new ApiError("not_found", `The account has no custom tool named ${params.name}.`, {
        param: "name",
      });
    return { body: customToolView(tool, services.config.creditPriceAtomic) };
  },
});
