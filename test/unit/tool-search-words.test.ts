import { afterEach, describe, expect, it, vi } from "vitest";
import { TOOLS } from "../../src/tools/catalogue/index.js";
import type { ToolDefinition } from "../../src/tools/definition.js";
import { searchTools } from "../../src/tools/search.js";

/**
 * The search works out each tool's words once: it normalised every tool's name, aliases, tags,
 * title and description on every search, so a batch of 100 MCP `search_tools` calls held the
 * gateway's event loop for most of a second. Counted, not timed: a search normalises its query
 * alone.
 */
afterEach(() => vi.restoreAllMocks());

/** The search as it was, word by word over every field of every tool: the answers to keep. */
function searchedAsBefore(tools: readonly ToolDefinition[], query: string, category?: string) {
  const WEIGHTS = { name: 10, alias: 8, tag: 6, title: 4, description: 1 } as const;
  const words = (text: string) =>
    text
      .normalize("NFKC")
      .toLowerCase()
      .split(/[^\p{L}\p{M}\p{N}]+/u)
      .filter(Boolean);
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

describe("tool search", () => {
  it("normalises only the query's text once the catalogue's words are known", () => {
    searchTools(TOOLS, "extract text from pdf");
    const normalize = vi.spyOn(String.prototype, "normalize");
    for (const query of ["pdf", "convert image to png", "hash", "translate 翻訳"])
      searchTools(TOOLS, query);
    expect(normalize).toHaveBeenCalledTimes(4);
  });

  it("finds and ranks as before", () => {
    const vocabulary = [
      ...new Set(
        TOOLS.flatMap((tool) =>
          `${tool.name} ${tool.aliases.join(" ")} ${tool.tags.join(" ")} ${tool.title} ${tool.description}`
            .toLowerCase()
            .split(/[^\p{L}\p{M}\p{N}]+/u)
            .filter(Boolean),
        ),
      ),
    ].sort();
    const queries = [
      "",
      "  ",
      "*",
      "PDF",
      "pdf text",
      "ima",
      "co",
      "Ｐｄｆ",
      "extract text from pdf",
      ...vocabulary,
      ...vocabulary.map((word) => word.slice(0, 3)),
      ...vocabulary.map((word, i) => `${word} ${vocabulary[(i * 7) % vocabulary.length]}`),
    ];
    const names = (tools: readonly ToolDefinition[]) => tools.map((tool) => tool.name);
    for (const query of queries)
      for (const category of [undefined, "documents", "web"])
        expect([query, category, names(searchTools(TOOLS, query, category))]).toEqual([
          query,
          category,
          names(searchedAsBefore(TOOLS, query, category)),
        ]);
  });
});
