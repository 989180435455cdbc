import { z } from "zod";
import { defineTool } from "../definition.js";
import { MAX_TEXT_CHARS } from "./limits.js";

const html = z.string().min(1).max(MAX_TEXT_CHARS);

export const htmlToMarkdown = defineTool({
  name: "html-to-markdown",
  aliases: [],
  title: "HTML to Markdown",
  description: "Convert an HTML document or fragment to Markdown.",
  cost: 1,
  pool: "general",
  timeoutMs: 5_000,
  input: z.strictObject({ html }).meta({ examples: [{ html: "<h1>Toolgate</h1><p>Pay <strong>per call</strong>.</p><ul><li>REST</li><li>MCP</li></ul>" }] }),
  output: z.object({ markdown: z.string() }),
});

export const markdownToHtml = defineTool({
  name: "markdown-to-html",
  aliases: [],
  title: "Markdown to HTML",
  description: "Render Markdown (GitHub-flavoured) to HTML. Raw HTML in the input is escaped, not passed through.",
  cost: 1,
  pool: "general",
  timeoutMs: 5_000,
  input: z.strictObject({ markdown: z.string().max(MAX_TEXT_CHARS) }).meta({ examples: [{ markdown: "# Toolgate\n\nPay **per call**.\n\n- REST\n- MCP" }] }),
  output: z.object({ html: z.string() }),
});

export const readabilityExtract = defineTool({
  name: "readability-extract",
  aliases: [],
  title: "Extract the main text",
  description: "Extract an article's main text, title and byline from an HTML page (Mozilla Readability).",
  cost: 2,
  pool: "general",
  timeoutMs: 10_000,
  input: z
    .strictObject({ html, url: z.url().optional().describe("The page's address, to resolve relative links.") })
    .meta({
      examples: [
        {
          html: "<html><head><title>Gateways explained</title></head><body><nav>Home | About</nav><article><h1>Gateways explained</h1><p class='byline'>By Ada</p><p>A gateway sits between callers and tools. It checks who is calling, counts what they use, and forwards the call to the worker that does the work. It keeps the books so that every credit is accounted for.</p><p>Good gateways are fast, predictable and honest about failures: a call that fails is refunded.</p></article><footer>© 2026</footer></body></html>",
        },
      ],
    }),
  output: z.object({
    title: z.string().nullable(),
    byline: z.string().nullable(),
    excerpt: z.string().nullable(),
    site_name: z.string().nullable(),
    text: z.string(),
    length: z.number().int(),
  }),
});
