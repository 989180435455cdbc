import { TOOLS } from "../../tools/catalogue/index.js";
import {
  classify,
  codeReview,
  embeddings,
  extract,
  extractUrl,
  generate,
  imageDescribe,
  imageGenerate,
  summarize,
  translate,
} from "./ai.js";
import { format } from "./code.js";
import { cron, dates, jsonpath } from "./data.js";
import {
  csv,
  pdfCreate,
  readability,
  sanitize,
  toHtml,
  toMarkdown,
  xlsxWrite,
  xml,
  yamlJson,
} from "./documents.js";
import { distances, timezoneAt } from "./geo.js";
import { HEAVY_PROXIES } from "./heavy-proxies.js";
import { barcode, metadata as imageMetadata } from "./images.js";
import type { ToolImplementation } from "./implementation.js";
import {
  entities,
  extractiveSummary,
  keywords,
  readability as readabilityScore,
  sentences,
  sentiment,
  spelling,
  tokens,
} from "./language.js";
import { cidr, encoding, ids, jwt } from "./security.js";
import { diff, digest, language, qr, regex, schemaValidate, timezone, units } from "./utilities.js";
import { feed, fetchPage, metadata as pageMetadata, robots, sitemap } from "./web.js";
import webSearch from "./web-search.js";

const implementations = [
  ...[
    generate,
    summarize,
    translate,
    extract,
    classify,
    embeddings,
    imageGenerate,
    imageDescribe,
    codeReview,
    extractUrl,
  ],
  ...[webSearch, fetchPage, pageMetadata, feed, robots, sitemap],
  ...[pdfCreate, xlsxWrite, csv, xml, yamlJson, toMarkdown, toHtml, readability, sanitize],
  ...[imageMetadata, qr, barcode],
  ...[
    language,
    sentiment,
    entities,
    keywords,
    sentences,
    readabilityScore,
    spelling,
    tokens,
    extractiveSummary,
  ],
  ...[schemaValidate, jsonpath, units, dates, timezone, cron],
  ...[format, regex, diff],
  ...[digest, jwt, encoding, ids, cidr],
  ...[distances, timezoneAt],
  ...HEAVY_PROXIES,
] as ToolImplementation[];

/** Every tool of the catalogue, by canonical name; start-up fails if one lacks an implementation. */
export const IMPLEMENTATIONS = new Map(implementations.map((impl) => [impl.definition.name, impl]));
for (const tool of TOOLS) {
  const impl = IMPLEMENTATIONS.get(tool.name);
  if (!impl) throw new Error(`tool ${tool.name} has no worker implementation`);
  if (impl.definition !== tool) throw new Error(`tool ${tool.name} is implemented twice`);
}
if (IMPLEMENTATIONS.size !== TOOLS.length)
  throw new Error("a worker implementation is not in the catalogue");
