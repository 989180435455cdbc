import type { Request, Response } from "express";
import type { AnyRoute } from "../../http/route.js";
import type { Forwarder } from "../forward.js";
import { callTool } from "./call.js";
import { listCategories } from "./categories.js";
import { getTool } from "./get.js";
import { listTools } from "./list.js";

/** The tool API, mounted under /v1/tools. */
export const toolRoutes = (forwarderFor: (req: Request, res: Response) => Forwarder): AnyRoute[] => [listTools, listCategories, getTool, callTool(forwarderFor)];
