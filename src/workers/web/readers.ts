import { XMLParser } from "fast-xml-parser";
import { parseHTML } from "linkedom";
import robotsParserModule from "robots-parser";
import RssParser from "rss-parser";
import { z } from "zod";
import { aiExtractUrl as aiExtractUrlTool } from "../../tools/catalogue/ai.js";
import {
  robotsCheck as robotsCheckTool,
  rssRead as rssReadTool,
  sitemapRead as sitemapReadTool,
  webFetch as webFetchTool,
  webMetadata as webMetadataTool,
} from "../../tools/catalogue/web.js";
import type { ToolDefinition } from "../../tools/definition.js";
import { WorkerError } from "../errors.js";
import { boundedMarkup, plainText, readArticle, turndown } from "../tools/documents.js";
import type { Fetched } from "./fetch.js";
import { robotsUrlOf } from "./robots-url.js";
import { mendWindows1252 } from "./windows-1252.js";

/**
 * What each tool that fetches a page reads from it. The page is fetched on the shared event loop
 * (fetch.ts) and read here, in a heavy-pool thread (heavy/jobs.ts): a 4.9 MB feed, sitemap or
 * robots.txt took the loop 0.7-1.4 s to parse, a page of nested markup up to its 2 s markup
 * limit, while every other caller's cheap call waited.
 */
export interface PageReader<T extends ToolDefinition = ToolDefinition, Out = unknown> {
  /** The tool that fetched the page. */
  tool: T["name"];
  /** What the reading is checked against before it is written as JSON: the tool's output, or what the tool goes on with. */
  output: z.ZodType;
  /** The reading of the page, given the tool's input (already checked against the tool's schema). */
  read(page: Fetched, input: z.output<T["input"]>): Promise<Out>;
}

/** A web tool's reader: what it reads from the page is the tool's output. */
const reader = <T extends ToolDefinition>(
  definition: T,
  read: PageReader<T, z.input<T["output"]>>["read"],
): PageReader<T, z.input<T["output"]>> => ({
  tool: definition.name,
  output: definition.output,
  read,
});

/**
 * The page's bytes as text, in the charset the page declares: its Content-Type's, else a
 * `<meta charset>` (or http-equiv) or XML declaration in its first 1024 bytes, else UTF-8 (a
 * Latin-1 "Café" read "Caf\ufffd"). TextDecoder knows the WHATWG labels; an unknown one is UTF-8.
 * Node since 20.18.3/22.13.0 decodes windows-1252's 0x80-0x9F, "€" and curly quotes, as Latin-1's
 * control characters (nodejs/node#60888), and WHATWG reads Latin-1, ISO-8859-1 and US-ASCII as
 * windows-1252: windows-1252.ts mends the text.
 */
function textOf(page: Fetched): string {
  const declared =
    /;\s*charset\s*=\s*"?([\w.:-]+)/i.exec(page.contentType)?.[1] ??
    /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)|^<\?xml[^>]+encoding\s*=\s*["']([\w.:-]+)/i
      .exec(Buffer.from(page.body.subarray(0, 1024)).toString("latin1"))
      ?.slice(1)
      .find(Boolean);
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(declared ?? "utf-8");
  } catch {
    decoder = new TextDecoder("utf-8");
  }
  const text = decoder.decode(page.body);
  return decoder.encoding === "windows-1252" ? mendWindows1252(text) : text;
}

// robots-parser is CommonJS with an ES-style default in its types: take the function either way.
const robotsParser = ((robotsParserModule as unknown as { default?: unknown }).default ??
  robotsParserModule) as unknown as typeof robotsParserModule.default;

/**
 * A page's readable content, as Markdown or text, and its title. Time-limited as the markup tools
 * are: a page of deeply nested markup would otherwise hold its thread for minutes.
 */
async function readPage(html: string, format: "markdown" | "text", mainContent: boolean) {
  return boundedMarkup("The page", "url", () => {
    const article = mainContent ? readArticle(html) : null;
    const content = article?.content ?? html;
    const title =
      article?.title ||
      parseHTML(html).document.querySelector("title")?.textContent?.trim() ||
      null;
    return {
      title,
      content: format === "markdown" ? turndown.turndown(content) : plainText(content),
    };
  });
}

const webFetch = reader(webFetchTool, async (page, input) => {
  const text = textOf(page);
  const isHtml = /html|xml/i.test(page.contentType) || /^\s*</.test(text);
  const read = isHtml
    ? await readPage(text, input.format, input.main_content)
    : { title: null, content: text };
  return {
    url: page.url,
    status: page.status,
    title: read.title,
    content: read.content,
    format: input.format,
    truncated: page.truncated,
  };
});

// Time-limited as readPage is: 980,000 unclosed <div>s held the shared event loop 5 minutes
// (every other caller waited), then brought the process down.
const webMetadata = reader(webMetadataTool, async (page, input) =>
  boundedMarkup("The page", "url", () => metadataOf(page, input.max_links)),
);

/** What web-metadata reads from a page's markup. */
function metadataOf(page: Fetched, maxLinks: number) {
  const { document } = parseHTML(textOf(page));
  const absolute = (href: string | null | undefined) => {
    if (!href) return null;
    try {
      return new URL(href, page.url).toString();
    } catch {
      return null;
    }
  };
  const meta = (selector: string) =>
    document.querySelector(selector)?.getAttribute("content")?.trim() || null;
  const prefixed = (prefix: string) => {
    const out: Record<string, string> = {};
    for (const el of document.querySelectorAll(
      `meta[property^="${prefix}:"], meta[name^="${prefix}:"]`,
    )) {
      const key = (el.getAttribute("property") ?? el.getAttribute("name") ?? "").slice(
        prefix.length + 1,
      );
      const value = el.getAttribute("content");
      if (key && value && !(key in out)) out[key] = value.trim();
    }
    return out;
  };
  const links: { url: string; text: string; rel: string | null }[] = [];
  for (const a of document.querySelectorAll("a[href]")) {
    if (links.length >= maxLinks) break;
    const url = absolute(a.getAttribute("href"));
    if (url && /^https?:/.test(url))
      links.push({
        url,
        text: (a.textContent ?? "").replace(/\s+/g, " ").trim(),
        rel: a.getAttribute("rel"),
      });
  }
  return {
    url: page.url,
    title: document.querySelector("title")?.textContent?.trim() || null,
    description: meta('meta[name="description"]'),
    canonical: absolute(document.querySelector('link[rel="canonical"]')?.getAttribute("href")),
    language: document.documentElement?.getAttribute("lang") || null,
    favicon: absolute(
      document.querySelector('link[rel~="icon"]')?.getAttribute("href") ?? "/favicon.ico",
    ),
    open_graph: prefixed("og"),
    twitter: prefixed("twitter"),
    links,
  };
}

const rss = new RssParser();
const summaryOf = (html: string | undefined) => (html ? plainText(html).slice(0, 2000) : null);

const rssRead = reader(rssReadTool, async (page, input) => {
  let parsed;
  try {
    parsed = await rss.parseString(textOf(page));
  } catch (err) {
    throw new WorkerError(
      502,
      "fetch_failed",
      `${page.url} is not an RSS or Atom feed: ${(err as Error).message.split("\n")[0]}`,
    );
  }
  return {
    url: page.url,
    title: parsed.title ?? null,
    link: parsed.link ?? null,
    description: parsed.description ?? null,
    items: parsed.items.slice(0, input.max_items).map((item) => ({
      title: item.title ?? null,
      link: item.link ?? null,
      published: item.isoDate ?? null,
      summary: item.contentSnippet?.slice(0, 2000) ?? summaryOf(item.content ?? item.summary),
      id: item.guid ?? (item as { id?: string }).id ?? null,
    })),
  };
});

const robotsCheck = reader(robotsCheckTool, async (page, input) => {
  // A missing robots.txt (4xx) allows everything; a server error was refused when it was fetched.
  const found = page.status >= 200 && page.status < 300;
  // The address as asked, before any redirect.
  const robotsUrl = robotsUrlOf(input.url);
  const parsed = robotsParser(robotsUrl, found ? textOf(page) : "");
  return {
    robots_url: robotsUrl,
    found,
    allowed: parsed.isAllowed(input.url, input.user_agent) ?? true,
    crawl_delay: parsed.getCrawlDelay(input.user_agent) ?? null,
    sitemaps: parsed.getSitemaps(),
  };
});

/** A sitemap is three levels deep; past this the parser stops (its own default, made explicit). */
const SITEMAP_MAX_NESTING = 100;
const sitemapXml = new XMLParser({
  ignoreAttributes: true,
  processEntities: false,
  isArray: (name) => name === "url" || name === "sitemap",
  maxNestedTags: SITEMAP_MAX_NESTING,
});

const sitemapRead = reader(sitemapReadTool, async (page, input) => {
  const doc = sitemapOf(page);
  const kind = doc.sitemapindex
    ? ("sitemapindex" as const)
    : doc.urlset
      ? ("urlset" as const)
      : null;
  if (!kind)
    throw new WorkerError(
      502,
      "fetch_failed",
      `${page.url} is not an XML sitemap (no <urlset> or <sitemapindex>).`,
    );
  const list = (kind === "urlset" ? doc.urlset!.url : doc.sitemapindex!.sitemap) ?? [];
  const str = (v: unknown) => (v === undefined || v === null ? null : String(v));
  return {
    url: page.url,
    kind,
    entries: list.slice(0, input.max_urls).map((e) => ({
      loc: String(e.loc ?? ""),
      lastmod: str(e.lastmod),
      changefreq: str(e.changefreq),
      priority: e.priority === undefined ? null : Number(e.priority),
    })),
    total: list.length,
  };
});

/**
 * The sitemap's XML. Nested past the parser's limit it is refused as a page of nested markup is
 * (422 resource_limit, naming url: it answered 500); a parser error otherwise means it is not a
 * sitemap, as a page that is not a feed is for rss-read (502).
 */
function sitemapOf(page: Fetched) {
  try {
    return sitemapXml.parse(textOf(page)) as {
      urlset?: { url?: Record<string, unknown>[] };
      sitemapindex?: { sitemap?: Record<string, unknown>[] };
    };
  } catch (err) {
    const message = (err as Error).message.split("\n")[0]!;
    if (/nested tags/i.test(message))
      throw new WorkerError(
        422,
        "resource_limit",
        `The sitemap is nested deeper than ${SITEMAP_MAX_NESTING} elements; it was refused.`,
        "url",
      );
    throw new WorkerError(502, "fetch_failed", `${page.url} is not an XML sitemap: ${message}`);
  }
}

/** How much of a page's readable text ai-extract-url gives the model. */
const EXTRACTION_TEXT_CHARS = 100_000;

/**
 * ai-extract-url's page, read as web-fetch reads one (its main content as text), cut to what the
 * model is given; the extraction itself then runs on the loop, which only waits for the model.
 */
const extractionText: PageReader<typeof aiExtractUrlTool, { text: string }> = {
  tool: aiExtractUrlTool.name,
  output: z.strictObject({ text: z.string() }),
  read: async (page) => ({
    text: (await readPage(textOf(page), "text", true)).content.slice(0, EXTRACTION_TEXT_CHARS),
  }),
};

/** Every tool that reads a fetched page in a thread, by name. */
export const PAGE_READERS = new Map<string, PageReader>(
  ([webFetch, webMetadata, rssRead, robotsCheck, sitemapRead, extractionText] as PageReader[]).map(
    (r) => [r.tool, r],
  ),
);
