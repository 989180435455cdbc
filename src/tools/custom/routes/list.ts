import { z } from "zod";
import { requireFeature } from "../../../accounts/tiers.js";
import { defineRoute } from "../../../http/route.js";
import { customToolView, customToolViewSchema } from "./view.js";

/** GET /api/v1/custom-tools: the account's own tools, oldest first. */
export const listCustomTools = defineRoute({
  method: "get",
  path: "/custom-tools",
  summary: "List the account's custom tools (Business tier).",
  auth: "key",
  errors: ["feature_not_in_tier"],
  response: z.object({ object: z.literal("list"), data: z.array(customToolViewSchema) }),
  async handler({ services, caller }) {
    requireFeature(caller.account.tier, "custom_endpoints");
    const tools = await services.store.listCustomTools(caller.account.id);
    return {
      body: {
        object: "list",
        data: tools.map((tool) => customToolView(tool, services.config.creditPriceAtomic)),
      },
    };
  },
});
