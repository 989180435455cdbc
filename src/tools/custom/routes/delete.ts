import { z } from "zod";
import { ApiError } from "../../../http/errors.js";
import { defineRoute } from "../../../http/route.js";

/**
 * DELETE /api/v1/custom-tools/{name}: the tool stops answering at once (calls after this are 404).
 * On any tier: an account moved off Business keeps its tools (they run again after an upgrade),
 * and removing one uses nothing of the tier's.
 */
export const deleteCustomTool = defineRoute({
  method: "delete",
  path: "/custom-tools/:name",
  summary:
    "Remove one of the account's custom tools; later calls to it are 404 tool_not_found (any tier: an account moved off Business may remove the tools it kept).",
  auth: "key",
  // Deleting a tool and registering its name again re-points the account's calls: see create.ts.
  unrestrictedKey: true,
  response: z.object({ name: z.string(), deleted: z.literal(true) }),
  async handler({ services, caller, params }) {
    if (!(await services.store.deleteCustomTool(caller.account.id, params.name!))) {
      throw new ApiError("not_found", `The account has no custom tool named ${params.name}.`, {
        param: "name",
      });
    }
    return { body: { name: params.name!, deleted: true as const } };
  },
});
