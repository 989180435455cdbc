import { z } from "zod";
import { requireFeature } from "../../../accounts/tiers.js";
import { ApiError } from "../../../http/errors.js";
import { defineRoute } from "../../../http/route.js";

/** DELETE /api/v1/custom-tools/{name}: the tool stops answering at once (calls after this are 404). */
export const deleteCustomTool = defineRoute({
  method: "delete",
  path: "/custom-tools/:name",
  summary:
    "Remove one of the account's custom tools; later calls to it are 404 tool_not_found (Business tier).",
  auth: "key",
  // Deleting a tool and registering its name again re-points the account's calls: see create.ts.
  unrestrictedKey: true,
  errors: ["feature_not_in_tier"],
  response: z.object({ name: z.string(), deleted: z.literal(true) }),
  async handler({ services, caller, params }) {
    requireFeature(caller.account.tier, "custom_endpoints");
    if (!(await services.store.deleteCustomTool(caller.account.id, params.name!))) {
      throw new ApiError("not_found", `The account has no custom tool named ${params.name}.`, {
        param: "name",
      });
    }
    return { body: { name: params.name!, deleted: true as const } };
  },
});
