import { ApiError } from "../http/errors.js";
import { findTool } from "./catalogue/index.js";
import type { ToolDefinition } from "./definition.js";

/** The tool a caller named (by name or alias), or 404 `tool_not_found`: every door says it alike. */
export function requireTool(name: string): ToolDefinition {
  const tool = findTool(name);
  if (!tool) throw new ApiError("tool_not_found", `No tool named ${name}. GET /v1/tools lists them (or search_tools over MCP).`);
  return tool;
}
