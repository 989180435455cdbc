import { z } from "zod";
import { defineTool } from "../definition.js";
import { webUrl } from "./common.js";

/**
 * The web tools read public pages through the SSRF guard, with size and time limits. With no
 * network they fail cleanly (502 tool_failed, refunded).
 */
const finalUrl = z.string().describe("The address finally read, after redirects.");

export const webFetch = defineTool({
  name: "web-fetch",
  aliases: ["fetch-page", "scrape"],
  title: "Fetch a web page",
  description:
    "Fetch a public web page and return its main content as Markdown or plain text (Readability), with its title.",
  cost: 3,
  category: "web",
  tags: ["crawl", "scrape", "download", "page to markdown", "reader"],
  pool: "general",
  timeoutMs: 20_000,
  input: z
    .strictObject({
      url: webUrl,
      format: z
        .enum(["markdown", "text"])
        .default("markdown")
        .describe("How to return the content."),
      main_content: z
        .boolean()
        .default(true)
        .describe(
          "Keep only the article's main content (Readability), dropping navigation and footers.",
        ),
    })
    .meta({ examples: [{ url: "https://example.com/", format: "markdown" }] }),
  output: z.object({
    url: finalUrl,
    status: z.number().int().describe("The HTTP status the page answered."),
    title: z.string().nullable().describe("The page's title."),
    content: z.string().describe("The content in the requested format."),
    format: z.enum(["markdown", "text"]).describe("The format of content."),
    truncated: z.boolean().describe("Whether the page was larger than the size limit and was cut."),
  }),
});

export const webMetadata = defineTool({
  name: "web-metadata",
  aliases: ["link-preview", "open-graph"],
  title: "Page metadata and links",
  description:
    "Read a public web page's metadata (title, description, canonical URL, Open Graph and Twitter cards, favicon, language) and its links.",
  cost: 2,
  category: "web",
  tags: ["open graph", "og", "meta tags", "link preview", "unfurl", "links", "seo"],
  pool: "general",
  timeoutMs: 20_000,
  input: z
    .strictObject({
      url: webUrl,
      max_links: z
        .number()
        .int()
        .min(0)
        .max(1000)
        .default(100)
        .describe("How many links to list at most."),
    })
    .meta({ examples: [{ url: "https://example.com/", max_links: 20 }] }),
  output: z.object({
    url: finalUrl,
    title: z.string().nullable().describe("The <title>."),
    description: z.string().nullable().describe("The meta description."),
    canonical: z.string().nullable().describe("The canonical URL."),
    language: z.string().nullable().describe("The html lang attribute."),
    favicon: z.string().nullable().describe("The icon's absolute URL."),
    open_graph: z
      .record(z.string(), z.string())
      .describe("og:* properties, without the og: prefix."),
    twitter: z.record(z.string(), z.string()).describe("twitter:* properties, without the prefix."),
    links: z
      .array(
        z.object({
          url: z.string().describe("Absolute URL."),
          text: z.string().describe("The link's text."),
          rel: z.string().nullable().describe("Its rel attribute."),
        }),
      )
      .describe("The page's links, in order."),
  }),
});

export const rssRead = defineTool({
  name: "rss-read",
  aliases: ["feed-read", "atom-read"],
  title: "Read an RSS or Atom feed",
  description:
    "Read an RSS or Atom feed from a public URL: the feed's title and its latest items with links and dates.",
  cost: 2,
  category: "web",
  tags: ["rss", "atom", "feed", "news", "podcast", "blog", "syndication"],
  pool: "general",
  timeoutMs: 20_000,
  input: z
    .strictObject({
      url: webUrl,
      max_items: z
        .number()
        .int()
        .min(1)
        .max(200)
        .default(20)
        .describe("How many items to return at most."),
    })
    .meta({ examples: [{ url: "https://example.com/feed.xml", max_items: 10 }] }),
  output: z.object({
    url: finalUrl,
    title: z.string().nullable().describe("The feed's title."),
    link: z.string().nullable().describe("The site the feed belongs to."),
    description: z.string().nullable().describe("The feed's description."),
    items: z
      .array(
        z.object({
          title: z.string().nullable().describe("The item's title."),
          link: z.string().nullable().describe("The item's address."),
          published: z
            .string()
            .nullable()
            .describe("Publication date, ISO 8601, when the feed gives one."),
          summary: z
            .string()
            .nullable()
            .describe("The item's summary or content snippet, as text."),
          id: z.string().nullable().describe("The item's guid or id."),
        }),
      )
      .describe("The newest items first, as the feed lists them."),
  }),
});

export const robotsCheck = defineTool({
  name: "robots-check",
  aliases: ["robots-txt"],
  title: "Check robots.txt",
  description:
    "Read a site's robots.txt and say whether a user agent may crawl a URL, with the crawl delay and sitemaps it declares.",
  cost: 1,
  category: "web",
  tags: ["robots.txt", "crawler", "seo", "allowed", "disallow"],
  pool: "general",
  timeoutMs: 15_000,
  input: z
    .strictObject({
      url: webUrl.describe("The page to check; robots.txt is read from its site's root."),
      user_agent: z.string().min(1).max(200).default("*").describe("The crawler's user agent."),
    })
    .meta({ examples: [{ url: "https://example.com/private/page", user_agent: "ToolgateBot" }] }),
  output: z.object({
    robots_url: z.string().describe("The robots.txt address read."),
    found: z
      .boolean()
      .describe("Whether the site has a robots.txt (a missing one allows everything)."),
    allowed: z.boolean().describe("Whether user_agent may fetch url."),
    crawl_delay: z
      .number()
      .nullable()
      .describe("Seconds between requests the site asks for, if any."),
    sitemaps: z.array(z.string()).describe("Sitemap addresses the file declares."),
  }),
});

export const sitemapRead = defineTool({
  name: "sitemap-read",
  aliases: ["sitemap"],
  title: "Read a sitemap",
  description:
    "Read an XML sitemap or sitemap index from a public URL: its page URLs with last-modified dates, or the child sitemaps.",
  cost: 2,
  category: "web",
  tags: ["sitemap.xml", "seo", "crawl", "urls", "pages"],
  pool: "general",
  timeoutMs: 20_000,
  input: z
    .strictObject({
      url: webUrl,
      max_urls: z
        .number()
        .int()
        .min(1)
        .max(50_000)
        .default(1000)
        .describe("How many entries to return at most."),
    })
    .meta({ examples: [{ url: "https://example.com/sitemap.xml", max_urls: 100 }] }),
  output: z.object({
    url: finalUrl,
    kind: z.enum(["urlset", "sitemapindex"]).describe("A list of pages, or a list of sitemaps."),
    entries: z
      .array(
        z.object({
          loc: z.string().describe("The page's (or child sitemap's) address."),
          lastmod: z
            .string()
            .nullable()
            .describe("Last modification date, as the sitemap gives it."),
          changefreq: z
            .string()
            .nullable()
            .describe("How often it changes, as the sitemap gives it."),
          priority: z.number().nullable().describe("Its priority from 0 to 1, if given."),
        }),
      )
      .describe("The entries, in order."),
    total: z.number().int().describe("How many entries the sitemap has (entries may be fewer)."),
  }),
});
