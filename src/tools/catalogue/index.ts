import type { ToolDefinition } from "../definition.js";
import {
  aiClassify,
  aiCodeReview,
  aiEmbeddings,
  aiExtract,
  aiExtractUrl,
  aiGenerate,
  aiImageDescribe,
  aiImageGenerate,
  aiSummarize,
  aiTranslate,
} from "./ai.js";
import { codeFormat, jsSandbox } from "./code.js";
import { cronExplain, dateParse, jsonpathQuery, mathEvaluate, sqlQuery } from "./data.js";
import {
  csvConvert,
  docxToText,
  htmlSanitize,
  htmlToMarkdown,
  markdownToHtml,
  pdfExtractText,
  pdfGenerate,
  readabilityExtract,
  spreadsheetRead,
  spreadsheetWrite,
  xmlConvert,
  yamlConvert,
} from "./documents.js";
import { geoDistance, geoTimezone } from "./geo.js";
import {
  barcodeGenerate,
  chartRender,
  imageMetadata,
  imageTransform,
  ocr,
  qrDecode,
  svgToPng,
} from "./images.js";
import {
  readabilityScore,
  sentenceSplit,
  spellCheck,
  textEntities,
  textKeywords,
  textSentiment,
  textSummarizeExtractive,
  tokenCount,
} from "./language.js";
import { encodeDecode, idGenerate, ipCidr, jwtDecode } from "./security.js";
import {
  hash,
  jsonSchemaValidate,
  languageDetect,
  qrCode,
  regexTest,
  textDiff,
  timezoneConvert,
  unitConvert,
} from "./utilities.js";
import { robotsCheck, rssRead, sitemapRead, webFetch, webMetadata } from "./web.js";
import { webSearch } from "./web-search.js";

/**
 * The catalogue: a fixed, named set of 64 tools (decisions.md D1), listed with prices in the README.
 * Adding or removing one is a versioned change; the order here is the order `GET /v1/tools` lists.
 */
export const TOOLS: readonly ToolDefinition[] = [
  // AI, through the configured OpenAI-compatible provider (10)
  aiGenerate,
  aiSummarize,
  aiTranslate,
  aiExtract,
  aiClassify,
  aiEmbeddings,
  aiImageGenerate,
  aiImageDescribe,
  aiCodeReview,
  aiExtractUrl,
  // Web (6)
  webSearch,
  webFetch,
  webMetadata,
  rssRead,
  robotsCheck,
  sitemapRead,
  // Documents (12)
  pdfExtractText,
  pdfGenerate,
  docxToText,
  spreadsheetRead,
  spreadsheetWrite,
  csvConvert,
  xmlConvert,
  yamlConvert,
  htmlToMarkdown,
  markdownToHtml,
  readabilityExtract,
  htmlSanitize,
  // Images (8)
  imageTransform,
  imageMetadata,
  svgToPng,
  chartRender,
  ocr,
  qrCode,
  qrDecode,
  barcodeGenerate,
  // Language (9)
  languageDetect,
  textSentiment,
  textEntities,
  textKeywords,
  sentenceSplit,
  readabilityScore,
  spellCheck,
  tokenCount,
  textSummarizeExtractive,
  // Data (8)
  jsonSchemaValidate,
  jsonpathQuery,
  sqlQuery,
  mathEvaluate,
  unitConvert,
  dateParse,
  timezoneConvert,
  cronExplain,
  // Code (4)
  codeFormat,
  jsSandbox,
  regexTest,
  textDiff,
  // Security and encodings (5)
  hash,
  jwtDecode,
  encodeDecode,
  idGenerate,
  ipCidr,
  // Geo (2)
  geoDistance,
  geoTimezone,
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
