/**
 * Choosing which tools an agent is handed: all of them, a list of names (aliases allowed), or a
 * search query matched against names, titles and descriptions — so a model is not given the
 * whole catalogue at once. Unavailable tools (no provider configured) are left out.
 */
import type { Toolgate } from "../client.js";
import type { ToolDescription } from "../types.js";

export interface ToolSubset {
  /** Only these tools (canonical names or aliases). */
  names?: string[];
  /** Only tools whose name, title or description contains every word of the query. */
  search?: string;
  /** Keep tools the gateway lists as unavailable. Default false. */
  includeUnavailable?: boolean;
}

export function selectTools(
  catalogue: ToolDescription[],
  subset: ToolSubset = {},
): ToolDescription[] {
  const words = subset.search?.toLowerCase().split(/\s+/).filter(Boolean) ?? [];
  const wanted = subset.names ? new Set(subset.names) : null;
  return catalogue.filter((tool) => {
    if (!subset.includeUnavailable && !tool.available) return false;
    if (wanted && !wanted.has(tool.name) && !tool.aliases.some((a) => wanted.has(a))) return false;
    // Whole words only: "hash" must not pick a tool for its "hashtags".
    const text = ` ${`${tool.name} ${tool.title} ${tool.description}`.toLowerCase().replace(/[^a-z0-9]+/g, " ")} `;
    return words.every((w) => text.includes(` ${w.replace(/[^a-z0-9]+/g, " ").trim()} `));
  });
}

export async function catalogueFor(
  client: Toolgate,
  subset?: ToolSubset,
): Promise<ToolDescription[]> {
  return selectTools(await client.tools.list(), subset);
}
