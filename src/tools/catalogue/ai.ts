import { z } from "zod";
import { defineTool } from "../definition.js";

/** The AI tools share one OpenAI-compatible provider and report its token usage. */
const usage = z.object({ prompt_tokens: z.number().int(), completion_tokens: z.number().int(), total_tokens: z.number().int() });
const maxTokens = z.number().int().min(1).max(8192).optional().describe("Upper bound on generated tokens.");
const longText = z.string().min(1).max(200_000);

export const aiGenerate = defineTool({
  name: "ai-generate",
  aliases: [],
  title: "Generate text",
  description: "Reach an AI model over REST: send a prompt or chat messages, get the model's text and token usage.",
  cost: 10,
  pool: "provider",
  timeoutMs: 60_000,
  input: z
    .strictObject({
      prompt: z.string().min(1).max(200_000).optional().describe("A single user prompt (or use messages)."),
      messages: z
        .array(z.strictObject({ role: z.enum(["system", "user", "assistant"]), content: z.string().max(200_000) }))
        .min(1)
        .max(100)
        .optional()
        .describe("A chat history (or use prompt)."),
      max_tokens: maxTokens,
      temperature: z.number().min(0).max(2).optional(),
    })
    .refine((v) => (v.prompt === undefined) !== (v.messages === undefined), { message: "Send exactly one of prompt or messages", path: ["prompt"] })
    .meta({
      examples: [{ prompt: "Write a haiku about toll gates.", max_tokens: 60 }],
      // The refinement above, said in JSON Schema for everyone who reads the published schema.
      oneOf: [{ required: ["prompt"] }, { required: ["messages"] }],
    }),
  output: z.object({ text: z.string(), model: z.string(), finish_reason: z.string().nullable(), usage }),
});

export const aiSummarize = defineTool({
  name: "ai-summarize",
  aliases: ["summarize"],
  title: "Summarize text",
  description: "Summarize a text in at most the given number of words.",
  cost: 10,
  pool: "provider",
  timeoutMs: 60_000,
  input: z
    .strictObject({ text: longText, max_words: z.number().int().min(5).max(1000).default(100) })
    .meta({ examples: [{ text: "Toolgate is a gateway that sells AI tool calls for credits or USDC micropayments. Agents call tools over REST or MCP.", max_words: 20 }] }),
  output: z.object({ summary: z.string(), model: z.string(), usage }),
});

export const aiTranslate = defineTool({
  name: "ai-translate",
  aliases: ["translate"],
  title: "Translate text",
  description: "Translate a text into the target language (a name such as \"French\" or a code such as \"fr\").",
  cost: 10,
  pool: "provider",
  timeoutMs: 60_000,
  input: z
    .strictObject({
      text: longText,
      target_language: z.string().trim().min(2).max(40),
      source_language: z.string().trim().min(2).max(40).optional(),
    })
    .meta({ examples: [{ text: "Good morning, how are you?", target_language: "French" }] }),
  output: z.object({ translation: z.string(), target_language: z.string(), model: z.string(), usage }),
});

export const aiExtract = defineTool({
  name: "ai-extract",
  aliases: ["extract"],
  title: "Extract structured data",
  description: "Extract structured JSON from a text, following a JSON Schema you give. The result is validated against your schema.",
  cost: 15,
  pool: "provider",
  timeoutMs: 60_000,
  input: z
    .strictObject({
      text: longText,
      schema: z.record(z.string(), z.unknown()).describe("A JSON Schema (an object schema) the result must satisfy."),
      instructions: z.string().max(2000).optional(),
    })
    .meta({
      examples: [
        {
          text: "Invoice 2291 from Acme Corp, due 2026-12-01, total 1,250.00 EUR.",
          schema: {
            type: "object",
            properties: { invoice_number: { type: "string" }, vendor: { type: "string" }, total: { type: "number" }, currency: { type: "string" } },
            required: ["invoice_number", "vendor", "total", "currency"],
            additionalProperties: false,
          },
        },
      ],
    }),
  output: z.object({ data: z.unknown(), model: z.string(), usage }),
});
