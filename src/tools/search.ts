import type { ToolDefinition } from "./definition.js";

/**
 * Ranked text search over the catalogue, for `GET /v1/tools?q=` and MCP `search_tools`: each
 * query word scores by where it is found (name > tags > title > description), and every word
 * must be found somewhere. Small enough (64 tools) to scan per query; each tool's words are
 * worked out once, so a query costs its own words.
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

/** A tool's words, each with the weight of the best field it is in, and all of them sorted (for prefixes). */
interface SearchWords {
  weights: Map<string, number>;
  sorted: string[];
}

/**
 * Each tool's words, worked out once per definition: normalising every tool's texts on every
 * search made a batch of 100 MCP `search_tools` calls hold the event loop for most of a second.
 * Keyed by the definition itself, so a catalogue's tools are read once, and a tool defined anew
 * (an account's custom tools, listed afresh per request) is read again and dropped with it.
 */
const searchWords = new WeakMap<ToolDefinition, SearchWords>();

function searchWordsOf(tool: ToolDefinition): SearchWords {
  const known = searchWords.get(tool);
  if (known) return known;
  const fields: [keyof typeof WEIGHTS, readonly string[]][] = [
    ["name", [tool.name]],
    ["alias", tool.aliases],
    ["tag", tool.tags],
    ["title", [tool.title]],
    ["description", [tool.description]],
  ];
  const weights = new Map<string, number>();
  for (const [field, texts] of fields)
    for (const word of texts.flatMap(words))
      weights.set(word, Math.max(weights.get(word) ?? 0, WEIGHTS[field]));
  const found = { weights, sorted: [...weights.keys()].sort() };
  searchWords.set(tool, found);
  return found;
}

/**
 * What `term` scores in a tool: the weight of the best field holding it as a word, or half that of
 * the best holding a longer word it begins (terms of 3 characters or more), whichever is more.
 */
function termScore({ weights, sorted }: SearchWords, term: string): number {
  let best = weights.get(term) ?? 0;
  if (term.length < 3) return best;
  // The words that begin with `term` sort together, from the first one not below it.
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (sorted[middle]! < term) low = middle + 1;
    else high = middle;
  }
  for (let i = low; i < sorted.length && sorted[i]!.startsWith(term); i++)
    if (sorted[i] !== term) best = Math.max(best, weights.get(sorted[i]!)! / 2);
  return best;
}

export function searchTools(
  tools: readonly ToolDefinition[],
  query: string,
  category?: string,
): ToolDefinition[] {
  // The query's words are its only per-search work: at most 100 (callers bound it to 200 characters).
  const terms = words(query);
  const scored = tools
    .filter((tool) => !category || tool.category === category)
    .map((tool) => {
      const toolWords = searchWordsOf(tool);
      let score = 0;
      for (const term of terms) {
        const best = termScore(toolWords, term);
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
