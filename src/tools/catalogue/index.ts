import type { ToolDefinition } from "../definition.js";
import { aiExtract, aiGenerate, aiSummarize, aiTranslate } from "./ai.js";
import { htmlToMarkdown, markdownToHtml, readabilityExtract } from "./documents.js";
import { hash, jsonSchemaValidate, languageDetect, qrCode, regexTest, textDiff, timezoneConvert, unitConvert } from "./utilities.js";
import { webSearch } from "./web-search.js";

/** The catalogue: a fixed, named set (DESIGN D1). */
export const TOOLS: readonly ToolDefinition[] = [
  webSearch,
  aiGenerate,
  aiSummarize,
  aiTranslate,
  aiExtract,
  htmlToMarkdown,
  markdownToHtml,
  readabilityExtract,
  qrCode,
  hash,
  jsonSchemaValidate,
  textDiff,
  regexTest,
  timezoneConvert,
  unitConvert,
  languageDetect,
];

const byName = new Map<string, ToolDefinition>();
for (const tool of TOOLS) {
  for (const name of [tool.name, ...tool.aliases]) {
    if (byName.has(name)) throw new Error(`duplicate tool name ${name}`);
    byName.set(name, tool);
  }
}

/** The tool a name or alias stands for. */
export function findTool(name: string): ToolDefinition | undefined {
  return byName.get(name);
}
