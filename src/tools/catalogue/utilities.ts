import { z } from "zod";
import { defineTool } from "../definition.js";

export const qrCode = defineTool({
  name: "qr-code",
  aliases: ["qr"],
  title: "QR code",
  description: "Encode text as a QR code, as a PNG (base64) or an SVG document.",
  cost: 1,
  category: "images",
  tags: ["qr", "barcode", "generate", "png", "svg"],
  pool: "general",
  timeoutMs: 5_000,
  input: z
    .strictObject({
      text: z.string().min(1).max(2000),
      format: z.enum(["png", "svg"]).default("png"),
      size: z.number().int().min(64).max(2048).default(256).describe("Width and height in pixels."),
      error_correction: z.enum(["L", "M", "Q", "H"]).default("M"),
    })
    .meta({ examples: [{ text: "https://toolgate.example/v1/tools", format: "png", size: 256 }] }),
  output: z.object({ format: z.enum(["png", "svg"]), mime_type: z.string(), encoding: z.enum(["base64", "utf8"]), data: z.string() }),
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
      text: z.string().max(10_000_000),
      algorithm: z.enum(["md5", "sha1", "sha256", "sha384", "sha512", "sha3-256", "sha3-512"]).default("sha256"),
      encoding: z.enum(["hex", "base64"]).default("hex"),
    })
    .meta({ examples: [{ text: "hello world", algorithm: "sha256" }] }),
  output: z.object({ algorithm: z.string(), encoding: z.string(), digest: z.string() }),
});

export const jsonSchemaValidate = defineTool({
  name: "json-schema-validate",
  aliases: [],
  title: "Validate JSON against a schema",
  description: "Validate a JSON value against a JSON Schema (draft 2020-12, draft-07 also accepted). Returns every error with its path.",
  cost: 1,
  category: "data",
  tags: ["validate", "json schema", "ajv"],
  pool: "general",
  timeoutMs: 5_000,
  input: z
    .strictObject({ schema: z.union([z.record(z.string(), z.unknown()), z.boolean()]), data: z.unknown() })
    .meta({
      examples: [
        {
          schema: { type: "object", properties: { name: { type: "string" }, age: { type: "integer", minimum: 0 } }, required: ["name"] },
          data: { name: "Ada", age: -1 },
        },
      ],
    }),
  output: z.object({
    valid: z.boolean(),
    errors: z.array(z.object({ path: z.string(), keyword: z.string(), message: z.string() })),
  }),
});

export const textDiff = defineTool({
  name: "text-diff",
  aliases: ["diff"],
  title: "Diff two texts",
  description: "Compare two texts by lines, words or characters; returns the changes and a unified diff.",
  cost: 1,
  category: "code",
  tags: ["compare", "patch", "unified diff", "changes"],
  pool: "general",
  timeoutMs: 5_000,
  input: z
    .strictObject({
      old: z.string().max(1_000_000),
      new: z.string().max(1_000_000),
      mode: z.enum(["lines", "words", "chars"]).default("lines"),
    })
    .meta({ examples: [{ old: "one\ntwo\nthree\n", new: "one\n2\nthree\nfour\n", mode: "lines" }] }),
  output: z.object({
    changes: z.array(z.object({ type: z.enum(["added", "removed", "unchanged"]), value: z.string() })),
    added: z.number().int(),
    removed: z.number().int(),
    unified: z.string(),
  }),
});

export const regexTest = defineTool({
  name: "regex-test",
  aliases: ["regex"],
  title: "Test a regular expression",
  description: "Run a JavaScript regular expression over a text and list every match with its index and groups. Runs under a time limit.",
  cost: 1,
  category: "code",
  tags: ["regular expression", "match", "pattern"],
  pool: "general",
  timeoutMs: 5_000,
  input: z
    .strictObject({
      pattern: z.string().min(1).max(1000),
      flags: z.string().regex(/^[dgimsuyv]*$/, "flags from d, g, i, m, s, u, v, y").max(8).default("g"),
      text: z.string().max(1_000_000),
    })
    .meta({ examples: [{ pattern: "(?<user>\\w+)@(?<domain>[\\w.]+)", flags: "g", text: "ada@example.com, bob@test.org" }] }),
  output: z.object({
    matched: z.boolean(),
    matches: z.array(z.object({ match: z.string(), index: z.number().int(), groups: z.record(z.string(), z.string().nullable()).nullable(), captures: z.array(z.string().nullable()) })),
  }),
});

export const timezoneConvert = defineTool({
  name: "timezone-convert",
  aliases: ["timezone"],
  title: "Convert between time zones",
  description: "Convert a date-time to another IANA time zone. A date-time without an offset is read in from_zone.",
  cost: 1,
  category: "data",
  tags: ["time zone", "iana", "date", "time"],
  pool: "general",
  timeoutMs: 5_000,
  input: z
    .strictObject({
      datetime: z.string().min(1).max(64).describe("ISO 8601, e.g. 2026-11-21T09:30:00 or 2026-11-21T09:30:00Z."),
      from_zone: z.string().max(64).default("UTC"),
      to_zone: z.string().max(64),
    })
    .meta({ examples: [{ datetime: "2026-11-21T09:30:00", from_zone: "Europe/Paris", to_zone: "America/New_York" }] }),
  output: z.object({ input: z.string(), output: z.string(), from_zone: z.string(), to_zone: z.string(), offset_minutes: z.number().int(), utc: z.string() }),
});

export const unitConvert = defineTool({
  name: "unit-convert",
  aliases: ["convert-units"],
  title: "Convert units",
  description: "Convert a value between units of the same dimension (length, mass, temperature, volume, speed, data, …).",
  cost: 1,
  category: "data",
  tags: ["units", "measurement", "convert", "metric", "imperial"],
  pool: "general",
  timeoutMs: 5_000,
  input: z
    .strictObject({ value: z.number().finite(), from: z.string().min(1).max(32), to: z.string().min(1).max(32) })
    .meta({ examples: [{ value: 26.2, from: "mi", to: "km" }] }),
  output: z.object({ value: z.number(), from: z.string(), to: z.string(), result: z.number() }),
});

export const languageDetect = defineTool({
  name: "language-detect",
  aliases: ["detect-language"],
  title: "Detect the language",
  description: "Detect the language of a text (ISO 639-3 code), with the closest alternatives. Needs a few words to be reliable.",
  cost: 1,
  category: "language",
  tags: ["language identification", "iso 639"],
  pool: "general",
  timeoutMs: 5_000,
  input: z
    .strictObject({ text: z.string().min(1).max(100_000) })
    .meta({ examples: [{ text: "Le renard brun rapide saute par-dessus le chien paresseux." }] }),
  output: z.object({
    language: z.string().describe("ISO 639-3 code, or und when undetermined."),
    confidence: z.number(),
    alternatives: z.array(z.object({ language: z.string(), score: z.number() })),
  }),
});
