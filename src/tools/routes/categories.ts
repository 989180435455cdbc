import { z } from "zod";
import { optionalKeyAccount } from "../../http/auth.js";
import { defineRoute } from "../../http/route.js";
import { TOOLS } from "../catalogue/index.js";
import { publicTools } from "../custom/registry.js";
import { CATEGORIES, CUSTOM_CATEGORY, CUSTOM_CATEGORY_DESCRIPTION } from "../definition.js";

export const listCategories = defineRoute({
  method: "get",
  path: "/categories",
  summary:
    "The catalogue's categories, each with its description and number of tools. Public; with an x-api-key whose account has its own custom tools (and a tier with custom endpoints), `custom` too, with their number.",
  auth: "public",
  // A key is optional, but one sent is checked, as by GET /v1/tools.
  errors: ["invalid_api_key", "api_key_revoked"],
  response: z.object({
    object: z.literal("list"),
    data: z.array(
      z.object({
        name: z
          .string()
          .describe(
            "A value of `category` on GET /v1/tools; `custom` (the account's own tools) is listed only to an account that has some.",
          ),
        description: z.string(),
        tools: z.number().int(),
      }),
    ),
  }),
  async handler({ services, req, res, requestId }) {
    const tools = publicTools(services, TOOLS);
    const data: { name: string; description: string; tools: number }[] = Object.entries(
      CATEGORIES,
    ).map(([name, description]) => ({
      name,
      description,
      tools: tools.filter((t) => t.category === name).length,
    }));
    // The account's own tools, as GET /v1/tools lists them to the same key.
    const account = await optionalKeyAccount(services, req, res, requestId);
    const own = account ? await services.upstream.listPrivate(account.id, account.tier) : [];
    if (own.length > 0)
      data.push({
        name: CUSTOM_CATEGORY,
        description: CUSTOM_CATEGORY_DESCRIPTION,
        tools: own.length,
      });
    return { body: { object: "list", data } };
  },
});
