import { z } from "zod";
import { boundedUrl } from "../../lib/bounded-formats.js";
import { MAX_TEXT_CHARS } from "./limits.js";

/** Schema pieces several tool definitions share. */

/**
 * A binary file sent inline as base64; `maxBytes` bounds the decoded size, and so does the body
 * limit: the base64 text is a tool text like any other (limits.ts), so its limit can be reached.
 */
export const base64File = (what: string, maxBytes: number) => {
  const chars = Math.min(Math.ceil(maxBytes / 3) * 4 + 4, MAX_TEXT_CHARS);
  const decoded = Math.floor(chars / 4) * 3;
  return z
    .string()
    .min(4)
    .max(chars)
    .regex(/^[A-Za-z0-9+/\r\n]+={0,2}$/, "base64 (standard alphabet)")
    .describe(
      `${what}, base64-encoded (at most ${decoded >= 1_000_000 ? `${Math.round(decoded / 1_000_000)} MB` : `${Math.round(decoded / 1000)} KB`} decoded).`,
    );
};

/** A file returned inline. */
export const fileOutput = (what: string) => ({
  mime_type: z.string().describe(`The media type of the ${what}.`),
  data: z.string().describe(`The ${what}, base64-encoded.`),
  bytes: z.number().int().describe(`Size of the ${what} in bytes.`),
});

/** A public web address for the web tools (http or https; private addresses are refused). */
export const webUrl = boundedUrl(2048, {
  protocol: /^https?$/,
  error: "Expected an absolute http:// or https:// URL",
}).describe(
  "An http(s) address on the public internet; private and loopback addresses are refused.",
);

export const text = (max: number, what = "The text.") => z.string().min(1).max(max).describe(what);
