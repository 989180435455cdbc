import { z } from "zod";
import { defineRoute } from "../http/route.js";

export const x402Supported = defineRoute({
  method: "get",
  path: "/supported",
  summary:
    "What x402 payments this gateway accepts: scheme, networks (v1 names and v2 CAIP-2 ids), token, and recipient.",
  auth: "public",
  response: z.object({
    kinds: z.array(
      z.object({
        x402Version: z.number().int(),
        scheme: z.string(),
        network: z.string(),
        asset: z.string(),
        extra: z.record(z.string(), z.string()),
      }),
    ),
    payTo: z.string().nullable(),
  }),
  async handler({ services }) {
    const x402 = services.payments?.config;
    const kinds = (x402?.networks ?? []).flatMap((n) =>
      ([1, 2] as const).map((version) => ({
        x402Version: version,
        scheme: "exact",
        network: version === 1 ? n.name : n.caip2,
        asset: n.usdc.address,
        extra: { name: n.usdc.name, version: n.usdc.version },
      })),
    );
    return { body: { kinds, payTo: x402?.payTo ?? null } };
  },
});
