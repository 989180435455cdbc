import { ApiError } from "../http/errors.js";
import { parseInput } from "../http/route.js";
import type { Services } from "../services.js";
import type { ToolDefinition } from "./definition.js";

/**
 * The one rule every door applies before money moves (credits debited or a payment settled):
 * the input is valid for the tool, and the tool can run now. Throws the caller's error (422
 * `validation_failed` naming the field, or 503 `tool_unavailable`); returns the parsed input.
 */
export function preflight(services: Services, tool: ToolDefinition, input: unknown): unknown {
  const unavailable = services.pools.unavailableReason(tool.name);
  if (unavailable)
    throw new ApiError("tool_unavailable", `The ${tool.name} tool is unavailable: ${unavailable}.`);
  return parseInput(tool.input, input, "body");
}
