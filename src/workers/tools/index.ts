import { TOOLS } from "../../tools/catalogue/index.js";
import { extract, generate, summarize, translate } from "./ai.js";
import { readability, toHtml, toMarkdown } from "./documents.js";
import type { ToolImplementation } from "./implementation.js";
import { diff, digest, language, qr, regex, schemaValidate, timezone, units } from "./utilities.js";
import webSearch from "./web-search.js";

const implementations = [webSearch, generate, summarize, translate, extract, toMarkdown, toHtml, readability, qr, digest, schemaValidate, diff, regex, timezone, units, language] as ToolImplementation[];

/** Every tool of the catalogue, by canonical name; start-up fails if one lacks an implementation. */
export const IMPLEMENTATIONS = new Map(implementations.map((impl) => [impl.definition.name, impl]));
for (const tool of TOOLS) {
  if (!IMPLEMENTATIONS.has(tool.name)) throw new Error(`tool ${tool.name} has no worker implementation`);
}
