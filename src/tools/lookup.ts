import { ApiError } from "../http/errors.js";
import { findTool } from "./catalogue/index.js";
import type { ToolDefinition } from "./definition.js";

/** 404 `tool_not_found`: every door says it alike, for a name that does not exist and for one the caller may not see. */
export const toolNotFound = (name: string) =>
  new ApiError(
    "tool_not_found",
    `No tool named ${name}. GET /v1/tools lists them (or search_tools over MCP).`,
  );

/** The tool a caller named (by name or alias), or 404 `tool_not_found`: every door says it alike. */
export function requireTool(name: string): ToolDefinition {
  const tool = findTool(name);
  if (!tool) throw toolNotFound(name);
  return tool;
}
