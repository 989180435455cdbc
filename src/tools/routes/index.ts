import type { AnyRoute } from "../../http/route.js";
import { callTool } from "./call.js";
import { listCategories } from "./categories.js";
import { getTool } from "./get.js";
import { listTools } from "./list.js";

/** The tool API, mounted under /v1/tools (the call last: `/:name` would match `/categories`). */
export const toolRoutes: AnyRoute[] = [listTools, listCategories, getTool, callTool];
