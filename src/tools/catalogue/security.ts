import { z } from "zod";
import { MAX_TEXT_CHARS } from "./limits.js";
import { defineTool } from "../definition.js";

export const jwtDecode = defineTool({
  name: "jwt-decode",
  aliases: ["jwt", "jwt-verify"],
  title: "Decode or verify a JWT",
  description:
    "Decode a JSON Web Token's header and claims and, given a secret (HS*) or public key (PEM or JWK), verify its signature, expiry and audience (jose).",
  cost: 1,
  category: "security",
  tags: ["jwt", "json web token", "jws", "verify signature", "claims", "auth", "oauth"],
  pool: "general",
  timeoutMs: 10_000,
  input: z
    .strictObject({
      token: z.string().min(10).max(100_000).describe("The compact JWT."),
      secret: z
        .string()
        .min(1)
        .max(10_000)
        .optional()
        .describe("An HMAC secret to verify with (HS256/384/512)."),
      public_key: z
        .union([z.string().max(20_000), z.record(z.string(), z.unknown())])
        .optional()
        .describe("An SPKI PEM public key or a JWK to verify with (RS*, PS*, ES*, EdDSA)."),
      audience: z
        .string()
        .max(1000)
        .optional()
        .describe("The audience the token must carry, when verifying."),
      issuer: z
        .string()
        .max(1000)
        .optional()
        .describe("The issuer the token must carry, when verifying."),
    })
    .meta({
      examples: [
        {
          token:
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhY2NfMTIzIiwibmFtZSI6IkFkYSIsImlhdCI6MTc2MzgwMDAwMH0.kbYmHN74usXXlj7xQIUChmianESzgr8HmCr-yFcC-N4",
          secret: "toolgate-example-secret",
        },
      ],
    }),
  output: z.object({
    header: z.record(z.string(), z.unknown()).describe("The protected header."),
    payload: z.record(z.string(), z.unknown()).describe("The claims."),
    verified: z
      .boolean()
      .nullable()
      .describe("Whether the signature and claims checked out; null when no key was given."),
    error: z.string().nullable().describe("Why verification failed."),
    expires_at: z.string().nullable().describe("The exp claim as ISO 8601."),
    expired: z.boolean().nullable().describe("Whether exp is in the past."),
  }),
});

export const encodeDecode = defineTool({
  name: "encode-decode",
  aliases: ["base64", "url-encode", "hex"],
  title: "Encode or decode",
  description:
    "Encode or decode text as base64, base64url, hex, URL (percent) encoding or HTML entities.",
  cost: 1,
  category: "security",
  tags: ["base64", "hex", "urlencode", "percent encoding", "html entities", "escape"],
  pool: "general",
  timeoutMs: 5_000,
  input: z
    .strictObject({
      text: z
        .string()
        .max(MAX_TEXT_CHARS)
        .describe("The text to encode, or the encoded text to decode."),
      encoding: z.enum(["base64", "base64url", "hex", "url", "html"]).describe("The encoding."),
      direction: z.enum(["encode", "decode"]).describe("Which way."),
    })
    .meta({ examples: [{ text: "pay per call ✓", encoding: "base64", direction: "encode" }] }),
  output: z.object({
    result: z.string().describe("The encoded or decoded text (decoded bytes read as UTF-8)."),
  }),
});

export const idGenerate = defineTool({
  name: "id-generate",
  aliases: ["uuid", "ulid", "random-string", "password-generate"],
  title: "Generate IDs and secrets",
  description:
    "Generate UUIDs (v4, v7), ULIDs, or random strings and passwords from a cryptographically secure source.",
  cost: 1,
  category: "security",
  tags: ["uuid", "ulid", "random", "password", "token", "nanoid", "identifier"],
  pool: "general",
  timeoutMs: 5_000,
  input: z
    .strictObject({
      kind: z.enum(["uuid-v4", "uuid-v7", "ulid", "random"]).describe("What to generate."),
      count: z.number().int().min(1).max(1000).default(1).describe("How many."),
      length: z.number().int().min(4).max(1024).default(32).describe("Length of random strings."),
      alphabet: z
        .enum(["alphanumeric", "hex", "base64url", "numeric", "password"])
        .default("alphanumeric")
        .describe("Characters of random strings (password adds symbols)."),
    })
    .meta({ examples: [{ kind: "uuid-v7", count: 2 }] }),
  output: z.object({
    values: z.array(z.string()).describe("The generated values."),
    kind: z.string().describe("What was generated."),
  }),
});

export const ipCidr = defineTool({
  name: "ip-cidr",
  aliases: ["cidr", "subnet", "ip-info"],
  title: "IP and CIDR math",
  description:
    "Describe an IPv4 or IPv6 address or CIDR block: network, broadcast, mask, size, first and last address, range type; and whether addresses fall inside it (ipaddr.js).",
  cost: 1,
  category: "security",
  tags: ["ip address", "subnet", "cidr", "netmask", "ipv4", "ipv6", "network"],
  pool: "general",
  timeoutMs: 5_000,
  input: z
    .strictObject({
      cidr: z
        .string()
        .min(2)
        .max(64)
        .describe("An address, or a block such as 10.0.0.0/22 or 2001:db8::/48."),
      contains: z
        .array(z.string().max(64))
        .max(1000)
        .default([])
        .describe("Addresses to test for membership."),
    })
    .meta({ examples: [{ cidr: "192.168.4.0/22", contains: ["192.168.5.17", "192.168.8.1"] }] }),
  output: z.object({
    version: z.enum(["ipv4", "ipv6"]).describe("The IP version."),
    network: z.string().describe("The network address."),
    prefix_length: z.number().int().describe("The prefix length."),
    netmask: z.string().describe("The subnet mask."),
    broadcast: z.string().nullable().describe("The broadcast address (IPv4)."),
    first: z.string().describe("The first address of the block."),
    last: z.string().describe("The last address of the block."),
    size: z
      .string()
      .describe("How many addresses the block has (a decimal string; IPv6 blocks are large)."),
    range: z.string().describe("The address's range type (private, loopback, unicast, …)."),
    contains: z
      .array(
        z.object({
          address: z.string().describe("The address tested."),
          inside: z.boolean().describe("Whether it is in the block."),
        }),
      )
      .describe("Each membership test."),
  }),
});
