import type { WorkerConfig } from "../config.js";
import { WorkerError } from "../errors.js";
import { providerRefusal, providerUnreachable } from "./provider-refusal.js";

export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

const stripTags = (s: string) =>
  s
    .replace(/<[^>]*>/g, "")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">");

async function getJson(
  url: string,
  headers: Record<string, string>,
  timeoutMs: number,
  provider: string,
): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(url, {
      headers: { accept: "application/json", ...headers },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    throw providerUnreachable(`The search provider (${provider})`, err);
  }
  if (!res.ok) throw await providerRefusal(`The search provider (${provider})`, res);
  return res.json();
}

/** SearXNG's JSON API (`format=json`) or the Brave Search web API, whichever is configured. */
export async function search(
  config: WorkerConfig,
  query: string,
  maxResults: number,
  timeoutMs: number,
): Promise<{ results: SearchResult[]; provider: string }> {
  const provider = config.search;
  if (!provider)
    throw new WorkerError(
      503,
      "tool_unavailable",
      "No search provider is configured (SEARXNG_URL or BRAVE_SEARCH_API_KEY).",
    );
  if (provider.provider === "searxng") {
    const url = new URL("/search", provider.url);
    url.searchParams.set("q", query);
    url.searchParams.set("format", "json");
    const body = (await getJson(url.href, {}, timeoutMs, "searxng")) as {
      results?: { title?: string; url?: string; content?: string }[];
    };
    const results = (body.results ?? []).filter((r) => r.url).slice(0, maxResults);
    return {
      provider: "searxng",
      results: results.map((r) => ({
        title: r.title ?? r.url!,
        url: r.url!,
        snippet: r.content ?? "",
      })),
    };
  }
  const url = new URL("/res/v1/web/search", provider.url);
  url.searchParams.set("q", query);
  url.searchParams.set("count", String(maxResults));
  const body = (await getJson(
    url.href,
    { "x-subscription-token": provider.apiKey },
    timeoutMs,
    "brave",
  )) as {
    web?: { results?: { title?: string; url?: string; description?: string }[] };
  };
  const results = (body.web?.results ?? []).filter((r) => r.url).slice(0, maxResults);
  return {
    provider: "brave",
    results: results.map((r) => ({
      title: stripTags(r.title ?? r.url!),
      url: r.url!,
      snippet: stripTags(r.description ?? ""),
    })),
  };
}
