import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import { Marked } from "marked";
import TurndownService from "turndown";
import { htmlToMarkdown, markdownToHtml, readabilityExtract } from "../../tools/catalogue/documents.js";
import { implement } from "./implementation.js";

const turndown = new TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-" });
turndown.remove(["script", "style", "noscript"]);

export const toMarkdown = implement(htmlToMarkdown, {
  async run(input) {
    return { markdown: turndown.turndown(input.html) };
  },
});

const escapeHtml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
// Raw HTML in Markdown is shown as text, and only web and mail links are kept: the output is safe to embed.
const marked = new Marked({
  gfm: true,
  renderer: {
    html: ({ text }) => escapeHtml(text),
    link({ href, tokens }) {
      const text = this.parser.parseInline(tokens);
      return /^(https?:|mailto:|#|\/)/i.test(href) ? `<a href="${escapeHtml(href)}">${text}</a>` : text;
    },
  },
});

export const toHtml = implement(markdownToHtml, {
  async run(input) {
    return { html: await marked.parse(input.markdown) };
  },
});

/** Text with block boundaries kept as blank lines (textContent alone runs paragraphs together). */
function plainText(html: string): string {
  const spaced = html.replace(/<\/(p|div|h[1-6]|li|blockquote|pre|tr|section|article|header|footer)>/gi, "$&\n\n").replace(/<br\s*\/?>/gi, "\n");
  const { document } = parseHTML(`<!doctype html><html><body>${spaced}</body></html>`);
  return (document.body?.textContent ?? "").replace(/[ \t]+\n/g, "\n").replace(/\n{3,}/g, "\n\n").trim();
}

export const readability = implement(readabilityExtract, {
  async run(input) {
    const { document } = parseHTML(input.html);
    const article = new Readability(document as unknown as Document).parse();
    const text = plainText(article?.content ?? input.html);
    return {
      title: article?.title || null,
      byline: article?.byline || null,
      excerpt: article?.excerpt || null,
      site_name: article?.siteName || null,
      text,
      length: text.length,
    };
  },
});
