import { XMLParser } from "fast-xml-parser";
import { parseHTML } from "linkedom";
import robotsParserModule from "robots-parser";
import RssParser from "rss-parser";
import {
  robotsCheck as robotsCheckTool,
  rssRead as rssReadTool,
  sitemapRead as sitemapReadTool,
  webFetch as webFetchTool,
  webMetadata as webMetadataTool,
} from "../../tools/catalogue/web.js";
import { WorkerError } from "../errors.js";
import { fetchPublic } from "../web/fetch.js";
import { boundedMarkup, plainText, readArticle, turndown } from "./documents.js";
import { implement } from "./implementation.js";

/** The web tools: everything they read goes through fetchPublic (SSRF guard, size and time limits). */
// robots-parser is CommonJS with an ES-style default in its types: take the function either way.
const robotsParser = ((robotsParserModule as unknown as { default?: unknown }).default ??
  robotsParserModule) as unknown as typeof robotsParserModule.default;
const HTML = "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5";

/**
 * A page's readable content, as Markdown or text, and its title. Time-limited as the markup tools
 * are: a page of deeply nested markup would otherwise hold the shared event loop for minutes.
 */
export async function readPage(html: string, format: "markdown" | "text", mainContent: boolean) {
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

export const webFetch = implement(webFetchTool, {
  async run(input, { config, timeoutMs }) {
    const page = await fetchPublic(config, input.url, { timeoutMs, accept: HTML });
    const text = page.body.toString("utf8");
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
  },
});

export const webMetadata = implement(webMetadataTool, {
  async run(input, { config, timeoutMs }) {
    const page = await fetchPublic(config, input.url, { timeoutMs, accept: HTML });
    // Time-limited as readPage is: 980,000 unclosed <div>s held the shared event loop 5 minutes
    // (every other caller waited), then brought the process down.
    return boundedMarkup("The page", "url", () => metadataOf(page, input.max_links));
  },
});

/** What web-metadata reads from a page's markup. */
function metadataOf(page: { url: string; body: Buffer }, maxLinks: number) {
  const { document } = parseHTML(page.body.toString("utf8"));
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
const textOf = (html: string | undefined) => (html ? plainText(html).slice(0, 2000) : null);

export const rssRead = implement(rssReadTool, {
  async run(input, { config, timeoutMs }) {
    const page = await fetchPublic(config, input.url, {
      timeoutMs,
      accept: "application/rss+xml,application/atom+xml,application/xml,text/xml;q=0.9,*/*;q=0.5",
    });
    let parsed;
    try {
      parsed = await rss.parseString(page.body.toString("utf8"));
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
        summary: item.contentSnippet?.slice(0, 2000) ?? textOf(item.content ?? item.summary),
        id: item.guid ?? (item as { id?: string }).id ?? null,
      })),
    };
  },
});

export const robotsCheck = implement(robotsCheckTool, {
  async run(input, { config, timeoutMs }) {
    const robotsUrl = new URL("/robots.txt", input.url).toString();
    const res = await fetchPublic(config, robotsUrl, {
      timeoutMs,
      accept: "text/plain",
      allowErrorStatus: true,
    });
    // A missing robots.txt (4xx) allows everything; a server error is a failure to read it.
    if (res.status >= 500)
      throw new WorkerError(502, "fetch_failed", `${robotsUrl} answered HTTP ${res.status}.`);
    const found = res.status >= 200 && res.status < 300;
    const parsed = robotsParser(robotsUrl, found ? res.body.toString("utf8") : "");
    return {
      robots_url: robotsUrl,
      found,
      allowed: parsed.isAllowed(input.url, input.user_agent) ?? true,
      crawl_delay: parsed.getCrawlDelay(input.user_agent) ?? null,
      sitemaps: parsed.getSitemaps(),
    };
  },
});

const sitemapXml = new XMLParser({
  ignoreAttributes: true,
  processEntities: false,
  isArray: (name) => name === "url" || name === "sitemap",
});

export const sitemapRead = implement(sitemapReadTool, {
  async run(input, { config, timeoutMs }) {
    const page = await fetchPublic(config, input.url, {
      timeoutMs,
      accept: "application/xml,text/xml;q=0.9,*/*;q=0.5",
    });
    const doc = sitemapXml.parse(page.body.toString("utf8")) as {
      urlset?: { url?: Record<string, unknown>[] };
      sitemapindex?: { sitemap?: Record<string, unknown>[] };
    };
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
  },
});
