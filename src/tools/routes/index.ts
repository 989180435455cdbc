import type { RouteDef } from "../../http/route.js";
import { listCategories } from "./categories.js";
import { getTool } from "./get.js";
import { listTools } from "./list.js";

export { callTool } from "./call.js";

/**
 * The tool API's reads, mounted under /v1/tools. The call (`POST /v1/tools/{name}`, `callTool`)
 * is mounted by the app ahead of every other route: it is the hot path.
 */
export const toolReadRoutes: RouteDef<any, any, any>[] = [listTools, listCategories, getTool];
