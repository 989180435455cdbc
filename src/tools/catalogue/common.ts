import { z } from "zod";

/** Schema pieces several tool definitions share. */

/** A binary file sent inline as base64; `maxBytes` bounds the decoded size. */
export const base64File = (what: string, maxBytes: number) =>
  z
    .string()
    .min(4)
    .max(Math.ceil(maxBytes / 3) * 4 + 4)
    .regex(/^[A-Za-z0-9+/\r\n]+={0,2}$/, "base64 (standard alphabet)")
    .describe(`${what}, base64-encoded (at most ${Math.round(maxBytes / 1_000_000)} MB decoded).`);

/** A file returned inline. */
export const fileOutput = (what: string) => ({
  mime_type: z.string().describe(`The media type of the ${what}.`),
  data: z.string().describe(`The ${what}, base64-encoded.`),
  bytes: z.number().int().describe(`Size of the ${what} in bytes.`),
});

/** A public web address for the web tools (http or https; private addresses are refused). */
export const webUrl = z
  .url({ protocol: /^https?$/ })
  .max(2048)
  .describe("An http(s) address on the public internet; private and loopback addresses are refused.");

export const text = (max: number, what = "The text.") => z.string().min(1).max(max).describe(what);
