import { TOOLS } from "../../tools/catalogue/index.js";
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
import { codeFormat } from "./code.js";
import { cronExplain, dateParse, jsonpathQuery } from "./data.js";
import {
  csvConvert,
  htmlSanitize,
  htmlToMarkdown,
  markdownToHtml,
  pdfGenerate,
  readabilityExtract,
  spreadsheetWrite,
  xmlConvert,
  yamlConvert,
} from "./documents.js";
import { geoDistance, geoTimezone } from "./geo.js";
import { HEAVY_PROXIES } from "./heavy-proxies.js";
import { barcodeGenerate, imageMetadata } from "./images.js";
import type { ToolImplementation } from "./implementation.js";
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
import webSearch from "./web-search.js";

const implementations = [
  ...[
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
  ],
  ...[webSearch, webFetch, webMetadata, rssRead, robotsCheck, sitemapRead],
  ...[
    pdfGenerate,
    spreadsheetWrite,
    csvConvert,
    xmlConvert,
    yamlConvert,
    htmlToMarkdown,
    markdownToHtml,
    readabilityExtract,
    htmlSanitize,
  ],
  ...[imageMetadata, qrCode, barcodeGenerate],
  ...[
    languageDetect,
    textSentiment,
    textEntities,
    textKeywords,
    sentenceSplit,
    readabilityScore,
    spellCheck,
    tokenCount,
    textSummarizeExtractive,
  ],
  ...[jsonSchemaValidate, jsonpathQuery, unitConvert, dateParse, timezoneConvert, cronExplain],
  ...[codeFormat, regexTest, textDiff],
  ...[hash, jwtDecode, encodeDecode, idGenerate, ipCidr],
  ...[geoDistance, geoTimezone],
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
