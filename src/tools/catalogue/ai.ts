import { z } from "zod";
import { defineTool } from "../definition.js";
import { base64File, fileOutput, webUrl } from "./common.js";
import { PHOTO_JPEG } from "./examples.js";

/** The AI tools share one OpenAI-compatible provider and report its token usage. */
const usage = z
  .object({
    prompt_tokens: z.number().int().describe("Tokens read by the model."),
    completion_tokens: z.number().int().describe("Tokens the model wrote."),
    total_tokens: z.number().int().describe("Both together."),
  })
  .describe("The provider's token count for this call.");
const maxTokens = z
  .number()
  .int()
  .min(1)
  .max(8192)
  .optional()
  .describe("Upper bound on generated tokens.");
const longText = z.string().min(1).max(200_000);

export const aiGenerate = defineTool({
  name: "ai-generate",
  aliases: [],
  title: "Generate text",
  description:
    "Reach an AI model over REST: send a prompt or chat messages, get the model's text and token usage.",
  cost: 10,
  category: "ai",
  tags: ["llm", "chat", "completion", "prompt", "gpt"],
  pool: "provider",
  timeoutMs: 60_000,
  input: z
    .strictObject({
      prompt: z
        .string()
        .min(1)
        .max(200_000)
        .optional()
        .describe("A single user prompt (or use messages)."),
      messages: z
        .array(
          z.strictObject({
            role: z.enum(["system", "user", "assistant"]),
            content: z.string().max(200_000),
          }),
        )
        .min(1)
        .max(100)
        .optional()
        .describe("A chat history (or use prompt)."),
      max_tokens: maxTokens,
      temperature: z
        .number()
        .min(0)
        .max(2)
        .optional()
        .describe("Sampling temperature, 0 (focused) to 2 (varied)."),
    })
    .refine((v) => (v.prompt === undefined) !== (v.messages === undefined), {
      message: "Send exactly one of prompt or messages",
      path: ["prompt"],
    })
    .meta({
      examples: [{ prompt: "Write a haiku about toll gates.", max_tokens: 60 }],
      // The refinement above, said in JSON Schema for everyone who reads the published schema.
      oneOf: [{ required: ["prompt"] }, { required: ["messages"] }],
    }),
  output: z.object({
    text: z.string().describe("The model's answer."),
    model: z.string().describe("The model that answered."),
    finish_reason: z.string().nullable().describe("Why the model stopped (stop, length…)."),
    usage,
  }),
});

export const aiSummarize = defineTool({
  name: "ai-summarize",
  aliases: ["summarize"],
  title: "Summarize text",
  description: "Summarize a text in at most the given number of words.",
  cost: 10,
  category: "ai",
  tags: ["summary", "tldr", "llm", "condense"],
  pool: "provider",
  timeoutMs: 60_000,
  input: z
    .strictObject({
      text: longText.describe("The text to summarize."),
      max_words: z
        .number()
        .int()
        .min(5)
        .max(1000)
        .default(100)
        .describe("The summary's maximum length in words."),
    })
    .meta({
      examples: [
        {
          text: "Toolgate is a gateway that sells AI tool calls for credits or USDC micropayments. Agents call tools over REST or MCP.",
          max_words: 20,
        },
      ],
    }),
  output: z.object({
    summary: z.string().describe("The summary."),
    model: z.string().describe("The model that answered."),
    usage,
  }),
});

export const aiTranslate = defineTool({
  name: "ai-translate",
  aliases: ["translate"],
  title: "Translate text",
  description:
    'Translate a text into the target language (a name such as "French" or a code such as "fr").',
  cost: 10,
  category: "ai",
  tags: ["translation", "language", "llm"],
  pool: "provider",
  timeoutMs: 60_000,
  input: z
    .strictObject({
      text: longText.describe("The text to translate."),
      target_language: z.string().trim().min(2).max(40).describe("The language to translate into."),
      source_language: z
        .string()
        .trim()
        .min(2)
        .max(40)
        .optional()
        .describe("The text's language, if known."),
    })
    .meta({ examples: [{ text: "Good morning, how are you?", target_language: "French" }] }),
  output: z.object({
    translation: z.string().describe("The translation."),
    target_language: z.string().describe("The language translated into."),
    model: z.string().describe("The model that answered."),
    usage,
  }),
});

export const aiExtract = defineTool({
  name: "ai-extract",
  aliases: ["extract"],
  title: "Extract structured data",
  description:
    "Extract structured JSON from a text, following a JSON Schema you give. The result is validated against your schema.",
  cost: 15,
  category: "ai",
  tags: ["structured output", "json", "parse", "llm"],
  pool: "provider",
  timeoutMs: 60_000,
  input: z
    .strictObject({
      text: longText.describe("The text to extract from."),
      schema: z
        .record(z.string(), z.unknown())
        .describe(
          "A JSON Schema (an object schema) the result must satisfy: at most 32 KB as JSON, nested at most 16 levels, its patterns in RE2 syntax (no lookaround or backreferences), as for custom tools.",
        ),
      instructions: z.string().max(2000).optional().describe("Extra guidance for the extraction."),
    })
    .meta({
      examples: [
        {
          text: "Invoice 2291 from Acme Corp, due 2026-12-01, total 1,250.00 EUR.",
          schema: {
            type: "object",
            properties: {
              invoice_number: { type: "string" },
              vendor: { type: "string" },
              total: { type: "number" },
              currency: { type: "string" },
            },
            required: ["invoice_number", "vendor", "total", "currency"],
            additionalProperties: false,
          },
        },
      ],
    }),
  output: z.object({
    data: z.unknown().describe("The extracted value; it satisfies the input schema."),
    model: z.string().describe("The model that answered."),
    usage,
  }),
});

export const aiClassify = defineTool({
  name: "ai-classify",
  aliases: ["classify"],
  title: "Classify text",
  description:
    "Put a text into one of the labels you give (zero-shot classification by an AI model), with the model's reason.",
  cost: 5,
  category: "ai",
  tags: ["categorize", "label", "zero-shot", "intent", "llm"],
  pool: "provider",
  timeoutMs: 60_000,
  input: z
    .strictObject({
      text: longText.describe("The text to classify."),
      labels: z
        .array(z.string().trim().min(1).max(100))
        .min(2)
        .max(50)
        .describe("The labels to choose from."),
      instructions: z
        .string()
        .max(2000)
        .optional()
        .describe("Extra guidance on what the labels mean."),
    })
    .meta({
      examples: [
        {
          text: "My card was charged twice for the same order.",
          labels: ["billing", "shipping", "technical", "other"],
        },
      ],
    }),
  output: z.object({
    label: z.string().describe("The chosen label, always one of the input labels."),
    reason: z.string().describe("The model's short explanation."),
    model: z.string().describe("The model that answered."),
    usage,
  }),
});

export const aiEmbeddings = defineTool({
  name: "ai-embeddings",
  aliases: ["embeddings", "embed"],
  title: "Text embeddings",
  description:
    "Turn texts into embedding vectors with the provider's embedding model (OpenAI /v1/embeddings), for semantic search and clustering.",
  cost: 2,
  category: "ai",
  tags: ["vector", "semantic search", "similarity", "rag"],
  pool: "provider",
  timeoutMs: 30_000,
  input: z
    .strictObject({
      texts: z
        .array(z.string().min(1).max(32_000))
        .min(1)
        .max(128)
        .describe("The texts to embed (1 to 128)."),
      dimensions: z
        .number()
        .int()
        .min(1)
        .max(4096)
        .optional()
        .describe("Ask for shorter vectors, where the model supports it."),
    })
    .meta({ examples: [{ texts: ["pay per call", "credits and micropayments"] }] }),
  output: z.object({
    embeddings: z.array(z.array(z.number())).describe("One vector per input text, in input order."),
    dimensions: z.number().int().describe("Length of each vector."),
    model: z.string().describe("The embedding model that answered."),
    usage: z
      .object({
        prompt_tokens: z.number().int().describe("Tokens read."),
        total_tokens: z.number().int().describe("Tokens billed by the provider."),
      })
      .describe("The provider's token count."),
  }),
});

export const aiImageGenerate = defineTool({
  name: "ai-image-generate",
  aliases: ["image-generate"],
  title: "Generate an image",
  description:
    "Generate an image from a prompt with the provider's image model (OpenAI /v1/images/generations); returns a PNG as base64.",
  cost: 40,
  category: "ai",
  tags: ["text to image", "dall-e", "picture", "art", "illustration"],
  pool: "provider",
  timeoutMs: 120_000,
  input: z
    .strictObject({
      prompt: z.string().min(1).max(4000).describe("What the image should show."),
      size: z
        .enum(["256x256", "512x512", "1024x1024", "1024x1792", "1792x1024"])
        .default("1024x1024")
        .describe("Width x height in pixels."),
    })
    .meta({
      examples: [{ prompt: "A toll gate on a country road at dawn, watercolour", size: "256x256" }],
    }),
  output: z.object({
    ...fileOutput("generated image"),
    revised_prompt: z
      .string()
      .nullable()
      .describe("The prompt as the model rewrote it, when it did."),
    model: z.string().describe("The image model that answered."),
  }),
});

export const aiImageDescribe = defineTool({
  name: "ai-image-describe",
  aliases: ["vision", "image-describe"],
  title: "Describe an image",
  description: "Describe an image or answer a question about it with the provider's vision model.",
  cost: 15,
  category: "ai",
  tags: ["vision", "caption", "alt text", "image understanding", "multimodal"],
  pool: "provider",
  timeoutMs: 60_000,
  input: z
    .strictObject({
      image: base64File("A PNG, JPEG, GIF or WebP image", 8_000_000),
      question: z
        .string()
        .min(1)
        .max(4000)
        .default("Describe this image.")
        .describe("What to ask about the image."),
      max_tokens: maxTokens,
    })
    .meta({
      examples: [{ image: PHOTO_JPEG, question: "What shapes and colours are in this picture?" }],
    }),
  output: z.object({
    description: z.string().describe("The model's answer."),
    model: z.string().describe("The model that answered."),
    usage,
  }),
});

export const aiCodeReview = defineTool({
  name: "ai-code-review",
  aliases: ["code-review"],
  title: "Review code",
  description:
    "Review source code or a diff with an AI model: a list of findings with severity, line and suggestion, and a summary.",
  cost: 20,
  category: "ai",
  tags: ["lint", "bugs", "pull request", "security review", "llm"],
  pool: "provider",
  timeoutMs: 90_000,
  input: z
    .strictObject({
      code: z.string().min(1).max(200_000).describe("The code or unified diff to review."),
      language: z
        .string()
        .max(40)
        .optional()
        .describe("The programming language, when it is not obvious."),
      focus: z
        .string()
        .max(1000)
        .optional()
        .describe("What to look at most (security, performance, style…)."),
    })
    .meta({
      examples: [
        {
          code: "function avg(xs) {\n  let s = 0;\n  for (let i = 0; i <= xs.length; i++) s += xs[i];\n  return s / xs.length;\n}",
          language: "javascript",
        },
      ],
    }),
  output: z.object({
    summary: z.string().describe("An overall assessment."),
    findings: z
      .array(
        z.object({
          severity: z
            .enum(["info", "minor", "major", "critical"])
            .describe("How serious the finding is."),
          line: z.number().int().nullable().describe("The 1-based line it concerns, if any."),
          message: z.string().describe("What is wrong."),
          suggestion: z.string().nullable().describe("How to fix it, if the model said."),
        }),
      )
      .describe("The findings, most serious first."),
    model: z.string().describe("The model that answered."),
    usage,
  }),
});

export const aiExtractUrl = defineTool({
  name: "ai-extract-url",
  aliases: ["extract-url"],
  title: "Extract structured data from a web page",
  description:
    "Fetch a public web page, take its readable text, and extract JSON that follows your JSON Schema with an AI model.",
  cost: 20,
  category: "ai",
  tags: ["scrape", "web scraping", "structured output", "crawl", "llm"],
  pool: "provider",
  timeoutMs: 90_000,
  input: z
    .strictObject({
      url: webUrl,
      schema: z
        .record(z.string(), z.unknown())
        .describe(
          "A JSON Schema (an object schema) the result must satisfy: at most 32 KB as JSON, nested at most 16 levels, its patterns in RE2 syntax (no lookaround or backreferences), as for custom tools.",
        ),
      instructions: z.string().max(2000).optional().describe("Extra guidance for the extraction."),
    })
    .meta({
      examples: [
        {
          url: "https://example.com/",
          schema: {
            type: "object",
            properties: { title: { type: "string" }, summary: { type: "string" } },
            required: ["title"],
            additionalProperties: false,
          },
        },
      ],
    }),
  output: z.object({
    data: z.unknown().describe("The extracted value; it satisfies the input schema."),
    url: z.string().describe("The address finally read, after redirects."),
    model: z.string().describe("The model that answered."),
    usage,
  }),
});
