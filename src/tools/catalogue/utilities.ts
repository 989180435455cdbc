import { z } from "zod";
import { defineTool } from "../definition.js";
import { MAX_TEXT_CHARS } from "./limits.js";

export const qrCode = defineTool({
  name: "qr-code",
  aliases: ["qr"],
  title: "QR code",
  description: "Encode text as a QR code, as a PNG (base64) or an SVG document.",
  cost: 1,
  category: "images",
  tags: ["qr", "barcode", "generate", "png", "svg"],
  pool: "heavy",
  timeoutMs: 5_000,
  input: z
    .strictObject({
      text: z.string().min(1).max(2000).describe("The text or URL to encode."),
      format: z.enum(["png", "svg"]).default("png").describe("The image format."),
      size: z.number().int().min(64).max(2048).default(256).describe("Width and height in pixels."),
      error_correction: z
        .enum(["L", "M", "Q", "H"])
        .default("M")
        .describe("Error correction level: L 7%, M 15%, Q 25%, H 30% of the code can be damaged."),
    })
    .meta({ examples: [{ text: "https://toolgate.example/v1/tools", format: "png", size: 256 }] }),
  output: z.object({
    format: z.enum(["png", "svg"]).describe("The image format."),
    mime_type: z.string().describe("The image's media type."),
    encoding: z.enum(["base64", "utf8"]).describe("base64 for PNG, utf8 for SVG."),
    data: z.string().describe("The image."),
  }),
});

export const hash = defineTool({
  name: "hash",
  aliases: [],
  title: "Hash",
  description: "Compute a cryptographic digest (MD5, SHA-1, SHA-2, SHA-3) of a UTF-8 text.",
  cost: 1,
  category: "security",
  tags: ["digest", "sha256", "md5", "checksum"],
  pool: "general",
  timeoutMs: 5_000,
  input: z
    .strictObject({
      text: z.string().max(MAX_TEXT_CHARS).describe("The text to hash (as UTF-8)."),
      algorithm: z
        .enum(["md5", "sha1", "sha256", "sha384", "sha512", "sha3-256", "sha3-512"])
        .default("sha256")
        .describe("The digest algorithm."),
      encoding: z.enum(["hex", "base64"]).default("hex").describe("How to write the digest."),
    })
    .meta({ examples: [{ text: "hello world", algorithm: "sha256" }] }),
  output: z.object({
    algorithm: z.string().describe("The algorithm used."),
    encoding: z.string().describe("The digest's encoding."),
    digest: z.string().describe("The digest."),
  }),
});

export const jsonSchemaValidate = defineTool({
  name: "json-schema-validate",
  aliases: [],
  title: "Validate JSON against a schema",
  description:
    "Validate a JSON value against a JSON Schema (draft 2020-12, draft-07 also accepted). Returns every error with its path.",
  cost: 1,
  category: "data",
  tags: ["validate", "json schema", "ajv"],
  pool: "heavy",
  timeoutMs: 5_000,
  input: z
    .strictObject({
      schema: z
        .union([z.record(z.string(), z.unknown()), z.boolean()])
        .describe("The JSON Schema."),
      data: z.unknown().describe("The JSON value to validate."),
    })
    .meta({
      examples: [
        {
          schema: {
            type: "object",
            properties: { name: { type: "string" }, age: { type: "integer", minimum: 0 } },
            required: ["name"],
          },
          data: { name: "Ada", age: -1 },
        },
      ],
    }),
  output: z.object({
    valid: z.boolean().describe("Whether data satisfies the schema."),
    errors: z
      .array(z.object({ path: z.string(), keyword: z.string(), message: z.string() }))
      .describe("Every violation: its JSON Pointer path, the schema keyword and a message."),
  }),
});

export const textDiff = defineTool({
  name: "text-diff",
  aliases: ["diff"],
  title: "Diff two texts",
  description:
    "Compare two texts by lines, words or characters; returns the changes and a unified diff.",
  cost: 1,
  category: "code",
  tags: ["compare", "patch", "unified diff", "changes"],
  pool: "heavy",
  timeoutMs: 5_000,
  input: z
    .strictObject({
      // Both texts travel in one body: each may take half.
      old: z
        .string()
        .max(MAX_TEXT_CHARS / 2)
        .describe("The original text."),
      new: z
        .string()
        .max(MAX_TEXT_CHARS / 2)
        .describe("The changed text."),
      mode: z
        .enum(["lines", "words", "chars"])
        .default("lines")
        .describe("Compare by lines, words or characters."),
    })
    .meta({
      examples: [{ old: "one\ntwo\nthree\n", new: "one\n2\nthree\nfour\n", mode: "lines" }],
    }),
  output: z.object({
    changes: z
      .array(z.object({ type: z.enum(["added", "removed", "unchanged"]), value: z.string() }))
      .describe("The texts as a sequence of unchanged, removed and added parts."),
    added: z.number().int().describe("How many lines (words, characters) were added."),
    removed: z.number().int().describe("How many were removed."),
    unified: z.string().describe("A unified diff (patch) of the two texts."),
  }),
});

export const regexTest = defineTool({
  name: "regex-test",
  aliases: ["regex"],
  title: "Test a regular expression",
  description:
    "Run a JavaScript regular expression over a text and list every match with its index and groups. Runs under a time limit.",
  cost: 1,
  category: "code",
  tags: ["regular expression", "match", "pattern"],
  pool: "heavy",
  timeoutMs: 5_000,
  input: z
    .strictObject({
      pattern: z.string().min(1).max(1000).describe("The regular expression, without slashes."),
      flags: z
        .string()
        .regex(/^[dgimsuyv]*$/, "flags from d, g, i, m, s, u, v, y")
        .max(8)
        .default("g")
        .describe("Flags, e.g. g, i, m, s, u."),
      text: z.string().max(MAX_TEXT_CHARS).describe("The text to search."),
    })
    .meta({
      examples: [
        {
          pattern: "(?<user>\\w+)@(?<domain>[\\w.]+)",
          flags: "g",
          text: "ada@example.com, bob@test.org",
        },
      ],
    }),
  output: z.object({
    matched: z.boolean().describe("Whether anything matched."),
    matches: z
      .array(
        z.object({
          match: z.string(),
          index: z.number().int(),
          groups: z.record(z.string(), z.string().nullable()).nullable(),
          captures: z.array(z.string().nullable()),
        }),
      )
      .describe("Each match (up to 1000): its text, index, named groups and numbered captures."),
  }),
});

export const timezoneConvert = defineTool({
  name: "timezone-convert",
  aliases: ["timezone"],
  title: "Convert between time zones",
  description:
    "Convert a date-time to another IANA time zone. A date-time without an offset is read in from_zone.",
  cost: 1,
  category: "data",
  tags: ["time zone", "iana", "date", "time"],
  pool: "general",
  timeoutMs: 5_000,
  input: z
    .strictObject({
      datetime: z
        .string()
        .min(1)
        .max(64)
        .describe("ISO 8601, e.g. 2026-11-21T09:30:00 or 2026-11-21T09:30:00Z."),
      from_zone: z
        .string()
        .max(64)
        .default("UTC")
        .describe("The IANA time zone of a date-time without an offset."),
      to_zone: z.string().max(64).describe("The IANA time zone to convert to."),
    })
    .meta({
      examples: [
        { datetime: "2026-11-21T09:30:00", from_zone: "Europe/Paris", to_zone: "America/New_York" },
      ],
    }),
  output: z.object({
    input: z
      .string()
      .describe(
        "The input as read, ISO 8601 with its exact offset (±HH:MM, or ±HH:MM:SS when the offset has seconds, as in a local-mean-time era: Paris +00:09:21 before 1911).",
      ),
    output: z.string().describe("The same instant in to_zone, written as input is."),
    from_zone: z.string().describe("The source time zone."),
    to_zone: z.string().describe("The target time zone."),
    offset_minutes: z
      .number()
      .int()
      .describe(
        "to_zone's UTC offset at that instant, in minutes, rounded to the nearest minute (output's offset is exact).",
      ),
    utc: z.string().describe("The instant in UTC."),
  }),
});

export const unitConvert = defineTool({
  name: "unit-convert",
  aliases: ["convert-units"],
  title: "Convert units",
  description:
    "Convert a value between units of the same dimension (length, mass, temperature, volume, speed, data, …).",
  cost: 1,
  category: "data",
  tags: ["units", "measurement", "convert", "metric", "imperial"],
  pool: "general",
  timeoutMs: 5_000,
  input: z
    .strictObject({
      value: z.number().finite().describe("The quantity."),
      from: z
        .string()
        .min(1)
        .max(32)
        .describe("Its unit (math.js names: km, mi, degF, kg, lb, GB…)."),
      to: z.string().min(1).max(32).describe("The unit to convert to."),
    })
    .meta({ examples: [{ value: 26.2, from: "mi", to: "km" }] }),
  output: z.object({
    value: z.number().describe("The quantity given."),
    from: z.string().describe("Its unit."),
    to: z.string().describe("The target unit."),
    result: z.number().describe("The quantity in the target unit."),
  }),
});

export const languageDetect = defineTool({
  name: "language-detect",
  aliases: ["detect-language"],
  title: "Detect the language",
  description:
    "Detect the language of a text (ISO 639-3 code), with the closest alternatives. Needs a few words to be reliable.",
  cost: 1,
  category: "language",
  tags: ["language identification", "iso 639"],
  pool: "general",
  timeoutMs: 5_000,
  input: z
    .strictObject({
      text: z.string().min(1).max(100_000).describe("The text; a sentence or more is reliable."),
    })
    .meta({ examples: [{ text: "Le renard brun rapide saute par-dessus le chien paresseux." }] }),
  output: z.object({
    language: z.string().describe("ISO 639-3 code, or und when undetermined."),
    confidence: z.number().describe("Confidence in the best guess, 0 to 1."),
    alternatives: z
      .array(z.object({ language: z.string(), score: z.number() }))
      .describe("The next closest languages with their scores."),
  }),
});
