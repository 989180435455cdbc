import { distance } from "fastest-levenshtein";
import { ApiError } from "../http/errors.js";
import { clip } from "../lib/readable-text.js";
import { findTool, TOOLS } from "./catalogue/index.js";
import type { ToolDefinition } from "./definition.js";

/**
 * 404 `tool_not_found`: every door says it alike, for a name that does not exist and for one the
 * caller may not see. A near miss of a catalogue name is named ("did you mean hash?"); only the
 * public catalogue is searched, so the answer tells nothing of any account's custom tools. The
 * name is repeated clipped: over MCP it may be as long as the body.
 */
export const toolNotFound = (name: string) => {
  const guess = closestCatalogueName(name);
  return new ApiError(
    "tool_not_found",
    `No tool named ${clip(name, 100)}${guess ? ` (did you mean ${guess}?)` : ""}. GET /v1/tools lists them (or search_tools over MCP).`,
  );
};

const CATALOGUE_NAMES = TOOLS.flatMap((tool) => [tool.name, ...tool.aliases]);

/**
 * The catalogue name or alias a mistyped name most likely meant: a third of it wrong at most, two
 * edits for a name of four letters or more (two letters swapped, "hsah", are two edits), and never
 * more than half of the name suggested (a two-letter alias is not a guess for any short word).
 */
function closestCatalogueName(name: string): string | undefined {
  // Longer than any name plus what may be wrong: no name is near, and the distance is not computed.
  if (name.length > 64) return undefined;
  const typed = name.toLowerCase();
  const allowed = Math.max(typed.length >= 4 ? 2 : 1, Math.floor(typed.length / 3));
  let best: { name: string; distance: number } | undefined;
  for (const candidate of CATALOGUE_NAMES) {
    const d = distance(typed, candidate);
    // The name itself (a tool the caller may not see) is no guess; the name in other letter case
    // ("HASH") is the best one (names are matched exactly, so it was not found as written).
    if (candidate === name || d > allowed || d > candidate.length / 2) continue;
    if (!best || d < best.distance) best = { name: candidate, distance: d };
  }
  return best?.name;
}

/** The tool a caller named (by name or alias), or 404 `tool_not_found`: every door says it alike. */
export function requireTool(name: string): ToolDefinition {
  const tool = findTool(name);
  if (!tool) throw toolNotFound(name);
  return tool;
}
