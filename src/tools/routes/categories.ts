import { z } from "zod";
import { defineRoute } from "../../http/route.js";
import { TOOLS } from "../catalogue/index.js";
import { CATEGORIES } from "../definition.js";
import { publicTools } from "../custom/registry.js";

export const listCategories = defineRoute({
  method: "get",
  path: "/categories",
  summary: "The catalogue's categories, each with its description and number of tools. Public.",
  auth: "public",
  response: z.object({
    object: z.literal("list"),
    data: z.array(z.object({ name: z.string(), description: z.string(), tools: z.number().int() })),
  }),
  async handler({ services }) {
    const tools = publicTools(services, TOOLS);
    const data = Object.entries(CATEGORIES).map(([name, description]) => ({
      name,
      description,
      tools: tools.filter((t) => t.category === name).length,
    }));
    return { body: { object: "list", data } };
  },
});
