import type { ValidateFunction } from "ajv";
import sharp from "sharp";
import {
  aiClassify as aiClassifyTool,
  aiCodeReview as aiCodeReviewTool,
  aiEmbeddings as aiEmbeddingsTool,
  aiExtract as aiExtractTool,
  aiExtractUrl as aiExtractUrlTool,
  aiGenerate as aiGenerateTool,
  aiImageDescribe as aiImageDescribeTool,
  aiImageGenerate as aiImageGenerateTool,
  aiSummarize as aiSummarizeTool,
  aiTranslate as aiTranslateTool,
} from "../../tools/catalogue/ai.js";
import {
  affordable,
  MAX_CHECKS_PER_CALL,
  SchemaCompiler,
  SchemaError,
} from "../../tools/custom/json-schema.js";
import { fetchPublic } from "../web/fetch.js";
import { validated } from "../json-schema.js";
import { decodeBase64, MAX_INPUT_PIXELS } from "./files.js";
import type { WorkerConfig } from "../config.js";
import { WorkerError } from "../errors.js";
import {
  chat,
  embed,
  generateImage,
  jsonAnswer,
  type ChatMessage,
} from "../providers/openai-compatible.js";
import { implement } from "./implementation.js";
import { readInThread } from "./web.js";

const unavailable = (config: { ai: unknown }) => (config.ai ? null : "no AI provider configured");

export const aiGenerate = implement(aiGenerateTool, {
  unavailable,
  async run(input, { config, timeoutMs }) {
    const messages: ChatMessage[] = input.messages ?? [{ role: "user", content: input.prompt! }];
    return chat(
      config,
      { messages, max_tokens: input.max_tokens, temperature: input.temperature },
      timeoutMs,
    );
  },
});

export const aiSummarize = implement(aiSummarizeTool, {
  unavailable,
  async run(input, { config, timeoutMs }) {
    const result = await chat(
      config,
      {
        messages: [
          {
            role: "system",
            content: `Summarize the user's text in at most ${input.max_words} words. Reply with the summary only.`,
          },
          { role: "user", content: input.text },
        ],
      },
      timeoutMs,
    );
    return {
      summary: atMostWords(result.text.trim(), input.max_words),
      model: result.model,
      usage: result.usage,
    };
  },
});

/**
 * `text` cut after its first `max` words, with "…" to say it was cut: the tool promises at most
 * `max_words`, and a model asked for as much often writes a few more. Failing the call instead
 * would refund a summary the caller can mostly use.
 */
function atMostWords(text: string, max: number): string {
  const words = text.match(/\S+\s*/g) ?? [];
  if (words.length <= max) return text;
  return `${words.slice(0, max).join("").trimEnd()}…`;
}

export const aiTranslate = implement(aiTranslateTool, {
  unavailable,
  async run(input, { config, timeoutMs }) {
    const from = input.source_language ? ` from ${input.source_language}` : "";
    const result = await chat(
      config,
      {
        messages: [
          {
            role: "system",
            content: `Translate the user's text${from} into ${input.target_language}. Reply with the translation only.`,
          },
          { role: "user", content: input.text },
        ],
      },
      timeoutMs,
    );
    return {
      translation: result.text.trim(),
      target_language: input.target_language,
      model: result.model,
      usage: result.usage,
    };
  },
});

/**
 * The callers' extraction schemas, compiled as custom tools' schemas are (tools/custom/json-schema.ts):
 * bounded in size, depth and cost per value, their `pattern`s on RE2. Ajv compiles and validates on
 * the workers' shared event loop, without a time limit: a catastrophic `pattern` checked against
 * an answer the caller steers held that loop until the watchdog restarted the workers (every other
 * caller's call timed out meanwhile), and an unbounded schema took 20 s to compile.
 */
const extractionSchemas = new SchemaCompiler();

/** The validator of the caller's extraction schema, or its 422 (before any provider call, so refunded). */
function extractionValidator(schema: Record<string, unknown>): ValidateFunction {
  try {
    return extractionSchemas.compile(schema);
  } catch (err) {
    if (err instanceof SchemaError)
      throw new WorkerError(422, "invalid_input", `The schema ${err.message}`, "schema");
    throw err;
  }
}

/** Structured extraction shared by ai-extract and ai-extract-url: the answer must satisfy the caller's schema. */
async function extractJson(
  config: WorkerConfig,
  input: { text: string; schema: Record<string, unknown>; instructions?: string },
  timeoutMs: number,
) {
  const validate = extractionValidator(input.schema);
  const result = await chat(
    config,
    {
      messages: [
        {
          role: "system",
          content: `Extract data from the user's text as JSON that satisfies this JSON Schema. Reply with the JSON only.${input.instructions ? `\n${input.instructions}` : ""}\n${JSON.stringify(input.schema)}`,
        },
        { role: "user", content: input.text },
      ],
      response_format: {
        type: "json_schema",
        json_schema: { name: "extraction", schema: input.schema },
      },
    },
    timeoutMs,
  );
  const data = jsonAnswer(result.text);
  if (!affordable(validate, data))
    throw new WorkerError(
      502,
      "provider_error",
      `The AI provider's answer has too many values to check against the schema (at most ${MAX_CHECKS_PER_CALL} schema checks).`,
    );
  const valid = validated(validate, data);
  if (valid !== true)
    throw new WorkerError(
      502,
      "provider_error",
      `The AI provider's answer did not match the schema: ${valid === "endless" ? "the schema refers to itself without end for this answer" : mismatchOf(validate)}`,
    );
  return { data, model: result.model, usage: result.usage };
}

/** Ajv's first error, as its errorsText says it ("data/total must be number"). */
function mismatchOf(validate: ValidateFunction): string {
  const error = validate.errors?.[0];
  return error ? `data${error.instancePath} ${error.message ?? "is invalid"}` : "invalid";
}

export const aiExtract = implement(aiExtractTool, {
  unavailable,
  run: (input, { config, timeoutMs }) => extractJson(config, input, timeoutMs),
});

export const aiClassify = implement(aiClassifyTool, {
  unavailable,
  async run(input, { config, timeoutMs }) {
    const schema = {
      type: "object",
      properties: { label: { type: "string", enum: input.labels }, reason: { type: "string" } },
      required: ["label", "reason"],
      additionalProperties: false,
    };
    const result = await chat(
      config,
      {
        messages: [
          {
            role: "system",
            content: `Classify the user's text into exactly one of these labels: ${JSON.stringify(input.labels)}.${input.instructions ? ` ${input.instructions}` : ""} Reply with JSON {"label": one of the labels, "reason": one short sentence}.`,
          },
          { role: "user", content: input.text },
        ],
        response_format: { type: "json_schema", json_schema: { name: "classification", schema } },
        temperature: 0,
      },
      timeoutMs,
    );
    const answer = jsonAnswer(result.text) as { label?: unknown; reason?: unknown };
    const label = input.labels.find(
      (l) =>
        l.toLowerCase() ===
        String(answer.label ?? "")
          .trim()
          .toLowerCase(),
    );
    if (!label)
      throw new WorkerError(
        502,
        "provider_error",
        "The AI provider answered a label that is not one of the labels given.",
      );
    return { label, reason: String(answer.reason ?? ""), model: result.model, usage: result.usage };
  },
});

export const aiEmbeddings = implement(aiEmbeddingsTool, {
  unavailable,
  run: (input, { config, timeoutMs }) => embed(config, input.texts, input.dimensions, timeoutMs),
});

export const aiImageGenerate = implement(aiImageGenerateTool, {
  unavailable,
  async run(input, { config, timeoutMs }) {
    const image = await generateImage(config, input.prompt, input.size, timeoutMs);
    // Re-encoded here: the caller always gets a PNG, whatever the provider sent.
    const png = await sharp(Buffer.from(image.b64, "base64"), {
      limitInputPixels: MAX_INPUT_PIXELS,
    })
      .png()
      .toBuffer()
      .catch(() => {
        throw new WorkerError(
          502,
          "provider_error",
          "The AI provider's image could not be decoded.",
        );
      });
    return {
      mime_type: "image/png",
      data: png.toString("base64"),
      bytes: png.length,
      revised_prompt: image.revisedPrompt,
      model: image.model,
    };
  },
});

export const aiImageDescribe = implement(aiImageDescribeTool, {
  unavailable,
  async run(input, { config, timeoutMs }) {
    const bytes = decodeBase64(input.image, "image");
    const meta = await sharp(bytes, { limitInputPixels: MAX_INPUT_PIXELS })
      .metadata()
      .catch(() => {
        throw new WorkerError(422, "invalid_input", "The image could not be read.", "image");
      });
    const result = await chat(
      config,
      {
        model: config.ai!.visionModel,
        max_tokens: input.max_tokens,
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: input.question },
              {
                type: "image_url",
                image_url: { url: `data:image/${meta.format};base64,${bytes.toString("base64")}` },
              },
            ],
          },
        ],
      },
      timeoutMs,
    );
    return { description: result.text.trim(), model: result.model, usage: result.usage };
  },
});

const SEVERITIES = ["critical", "major", "minor", "info"] as const;
type Severity = (typeof SEVERITIES)[number];

/**
 * The words models use for severity besides the four asked for, mapped to the nearest of them.
 * Any other word fails the call (refunded): ranked as "info", a finding the model thought serious
 * was shown as the least of them, most serious first no longer true.
 */
const SEVERITY_WORDS: Record<string, Severity> = {
  critical: "critical",
  blocker: "critical",
  severe: "critical",
  high: "major",
  major: "major",
  error: "major",
  medium: "minor",
  moderate: "minor",
  minor: "minor",
  warning: "minor",
  low: "info",
  info: "info",
  note: "info",
  suggestion: "info",
};

function severityOf(value: unknown): Severity {
  const word = String(value).trim().toLowerCase();
  const severity = Object.hasOwn(SEVERITY_WORDS, word) ? SEVERITY_WORDS[word] : undefined;
  if (!severity)
    throw new WorkerError(
      502,
      "provider_error",
      `The AI provider's review gave a finding the severity ${JSON.stringify(String(value).slice(0, 40))}, none of ${SEVERITIES.join(", ")}.`,
    );
  return severity;
}

export const aiCodeReview = implement(aiCodeReviewTool, {
  unavailable,
  async run(input, { config, timeoutMs }) {
    const lines = input.code.split("\n");
    const numbered = lines.map((line, i) => `${i + 1}: ${line}`).join("\n");
    const result = await chat(
      config,
      {
        messages: [
          {
            role: "system",
            content:
              `You review code${input.language ? ` written in ${input.language}` : ""}.${input.focus ? ` Focus on: ${input.focus}.` : ""} ` +
              'Reply with JSON {"summary": string, "findings": [{"severity": "critical"|"major"|"minor"|"info", "line": number|null, "message": string, "suggestion": string|null}]}. Lines are numbered.',
          },
          { role: "user", content: numbered },
        ],
        response_format: { type: "json_object" },
        temperature: 0,
      },
      timeoutMs,
    );
    const answer = jsonAnswer(result.text) as { summary?: unknown; findings?: unknown };
    if (
      typeof answer.summary !== "string" ||
      !Array.isArray(answer.findings) ||
      !answer.findings.every((f) => f !== null && typeof f === "object")
    )
      throw new WorkerError(
        502,
        "provider_error",
        "The AI provider's review did not have a summary and findings.",
      );
    const findings = (answer.findings as Record<string, unknown>[])
      .map((f) => ({
        severity: severityOf(f.severity),
        // A line the code does not have is no place to point at: the finding stays, unplaced.
        line:
          Number.isInteger(f.line) && (f.line as number) >= 1 && (f.line as number) <= lines.length
            ? (f.line as number)
            : null,
        message: String(f.message ?? ""),
        suggestion: typeof f.suggestion === "string" ? f.suggestion : null,
      }))
      .sort((a, b) => SEVERITIES.indexOf(a.severity) - SEVERITIES.indexOf(b.severity));
    return { summary: answer.summary, findings, model: result.model, usage: result.usage };
  },
});

export const aiExtractUrl = implement(aiExtractUrlTool, {
  unavailable,
  async run(input, ctx) {
    const { config, timeoutMs } = ctx;
    // A schema it would refuse is refused before the page is fetched (compiled once: cached).
    extractionValidator(input.schema);
    const startedAt = Date.now();
    const page = await fetchPublic(config, input.url, {
      timeoutMs: Math.min(20_000, timeoutMs / 2),
      accept: "text/html,*/*;q=0.5",
    });
    // Its readable text is read in a thread (web/readers.ts), as web-fetch's is: nested markup
    // held the shared event loop up to the 2 s markup limit.
    const read = await readInThread(
      ctx,
      aiExtractUrlTool,
      input,
      page,
      timeoutMs / 2 - (Date.now() - startedAt),
    );
    const { text } = JSON.parse(read.json) as { text: string };
    const result = await extractJson(
      config,
      { text, schema: input.schema, instructions: input.instructions },
      timeoutMs / 2,
    );
    return { ...result, url: page.url };
  },
});
