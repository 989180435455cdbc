import type { RouteDef } from "../../../http/route.js";
import { createCustomTool } from "./create.js";
import { deleteCustomTool } from "./delete.js";
import { getCustomTool } from "./get.js";
import { listCustomTools } from "./list.js";

/** The custom-tools API, mounted under /api/v1. */
export const customToolRoutes: RouteDef<any, any, any>[] = [createCustomTool, listCustomTools, getCustomTool, deleteCustomTool];
