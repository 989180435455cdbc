import type { ToolDefinition } from "./definition.js";

/**
 * Ranked text search over the catalogue, for `GET /v1/tools?q=` and MCP `search_tools`: each
 * query word scores by where it is found (name > tags > title > description), and every word
 * must be found somewhere. Small enough (64 tools) to scan per query.
 *
 * Words are runs of Unicode letters, marks and digits (NFKC, lower-cased), so `é` or `翻訳` is a
 * word like any other and, found nowhere, leaves nothing. A query with no words at all is no search
 * (everything, in catalogue order) only when it is blank (`q=`); one of only other characters
 * (`*`, an emoji, a zero-width space) finds nothing, as a word found nowhere would.
 */
const WEIGHTS = { name: 10, alias: 8, tag: 6, title: 4, description: 1 } as const;

const words = (text: string) =>
  text
    .normalize("NFKC")
    .toLowerCase()
    .split(/[^\p{L}\p{M}\p{N}]+/u)
    .filter(Boolean);

export function searchTools(
  tools: readonly ToolDefinition[],
  query: string,
  category?: string,
): ToolDefinition[] {
  const terms = words(query);
  const scored = tools
    .filter((tool) => !category || tool.category === category)
    .map((tool) => {
      const fields = {
        name: words(tool.name),
        alias: tool.aliases.flatMap(words),
        tag: tool.tags.flatMap(words),
        title: words(tool.title),
        description: words(tool.description),
      };
      let score = 0;
      for (const term of terms) {
        let best = 0;
        for (const [field, list] of Object.entries(fields) as [keyof typeof WEIGHTS, string[]][]) {
          const exact = list.includes(term);
          const prefix = !exact && term.length >= 3 && list.some((w) => w.startsWith(term));
          if (exact || prefix) best = Math.max(best, WEIGHTS[field] * (exact ? 1 : 0.5));
        }
        if (best === 0) return { tool, score: 0 };
        score += best;
      }
      return { tool, score };
    });
  if (terms.length === 0) return query.trim() === "" ? scored.map((s) => s.tool) : [];
  return scored
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score)
    .map((s) => s.tool);
}
