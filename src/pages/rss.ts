import { lazyRequire } from "../lib/lazy-require.js";

/**
 * RSS 2.0 documents (the changelog's and the status page's), built with fast-xml-parser's
 * builder so every text is escaped by the library, not by hand.
 */
export interface RssItem {
  title: string;
  link: string;
  /** Stable and unique within the feed: the same release or incident update keeps its guid. */
  guid: string;
  date: Date;
  description: string;
}

export interface RssChannel {
  title: string;
  link: string;
  /** The feed's own address (atom:link rel="self", as validators ask). */
  self: string;
  description: string;
  items: RssItem[];
}

const xml = lazyRequire<typeof import("fast-xml-parser")>("fast-xml-parser");
let builder: InstanceType<typeof import("fast-xml-parser").XMLBuilder> | undefined;
/** Made on the first feed served (the library is loaded then, not at start-up). */
const xmlBuilder = () =>
  (builder ??= new (xml().XMLBuilder)({
    ignoreAttributes: false,
    attributeNamePrefix: "@_",
    format: true,
    suppressEmptyNode: true,
  }));

/** RFC 822 date, as RSS 2.0 requires: "Sun, 22 Nov 2026 10:00:00 GMT". */
export const rfc822 = (date: Date): string => date.toUTCString();

/**
 * Characters XML 1.0 does not allow anywhere, even escaped (its `Char` production): C0 controls
 * other than tab, newline and carriage return, and U+FFFE/U+FFFF. The builder escapes markup but
 * passes these through, and one of them (a control character pasted into an incident's title, or
 * into CHANGELOG.md) made the whole feed unreadable: feed readers' XML parsers refuse it.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point
const NOT_XML_CHARS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g;

export function renderRss(channel: RssChannel): string {
  const items = [...channel.items].sort((a, b) => b.date.getTime() - a.date.getTime());
  // The newest item's date; a feed with none has no build date to give (the element is optional).
  const latest = items[0]?.date;
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    xmlBuilder()
      .build({
        rss: {
          "@_version": "2.0",
          "@_xmlns:atom": "http://www.w3.org/2005/Atom",
          channel: {
            title: channel.title,
            link: channel.link,
            description: channel.description,
            language: "en",
            ...(latest ? { lastBuildDate: rfc822(latest) } : {}),
            "atom:link": {
              "@_href": channel.self,
              "@_rel": "self",
              "@_type": "application/rss+xml",
            },
            item: items.map((item) => ({
              title: item.title,
              link: item.link,
              guid: { "#text": item.guid, "@_isPermaLink": "false" },
              pubDate: rfc822(item.date),
              description: item.description,
            })),
          },
        },
      })
      .replace(NOT_XML_CHARS, "")
  );
}
