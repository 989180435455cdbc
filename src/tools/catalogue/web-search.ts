import { z } from "zod";
import { defineTool } from "../definition.js";

export const webSearch = defineTool({
  name: "web-search",
  aliases: ["search-web"],
  title: "Web search",
  description:
    "Search the web. Returns result titles, URLs and snippets from the configured search provider (SearXNG or Brave Search).",
  cost: 5,
  category: "web",
  tags: ["search engine", "serp", "google", "results"],
  pool: "provider",
  timeoutMs: 15_000,
  input: z
    .strictObject({
      query: z.string().trim().min(1).max(400).describe("What to search for."),
      max_results: z
        .number()
        .int()
        .min(1)
        .max(20)
        .default(5)
        .describe("How many results to return (1-20)."),
    })
    .meta({ examples: [{ query: "x402 payment protocol", max_results: 3 }] }),
  output: z.object({
    results: z
      .array(z.object({ title: z.string(), url: z.string(), snippet: z.string() }))
      .describe("The results, best first: title, address and snippet."),
    provider: z.string().describe("The search provider that answered."),
  }),
});
