import type { AnyRoute } from "../../../http/route.js";
import { createCustomTool } from "./create.js";
import { deleteCustomTool } from "./delete.js";
import { getCustomTool } from "./get.js";
import { listCustomTools } from "./list.js";

/** The custom-tools API (one route per file), mounted under /api/v1. */
export const customToolRoutes: AnyRoute[] = [
  createCustomTool,
  listCustomTools,
  getCustomTool,
  deleteCustomTool,
];
