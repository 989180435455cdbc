import { z } from "zod";
import { PUBLIC_DOCUMENT_HEADERS } from "../http/html.js";
import { defineRoute } from "../http/route.js";
import type { Services } from "../services.js";
import { TOOLS } from "../tools/catalogue/index.js";
import { publicTools } from "../tools/custom/registry.js";
import type { ToolDefinition } from "../tools/definition.js";
import { lazyRequire } from "../lib/lazy-require.js";
import { atomicPrice, formatUsd } from "../lib/money.js";
import { jsonSchemasOf } from "../tools/views.js";
import { PACKS, PLANS } from "./price-list.js";
import { offerFor } from "./offer.js";

/**
 * The x402 reference extensions, loaded the first time an offer needs them: only a gateway with
 * x402 on builds offers, and the library is a measured share of start-up time.
 */
const bazaarLibrary =
  lazyRequire<typeof import("@x402/extensions/bazaar")>("@x402/extensions/bazaar");
const paymentIdentifierLibrary = lazyRequire<typeof import("@x402/extensions/payment-identifier")>(
  "@x402/extensions/payment-identifier",
);

/**
 * How x402 clients and facilitator catalogues find what Toolgate sells: the v2 extensions a paid
 * call's 402 carries — `bazaar` (the tool's input example and schema, and its output schema, built
 * with the x402 reference `@x402/extensions`) and `payment-identifier` (a client may name its
 * payment, and the call is idempotent on that name) — and the `/.well-known/x402` document that
 * lists every paid resource with its price and networks.
 */
export function toolExtensions(tool: ToolDefinition): Record<string, unknown> {
  let extensions = built.get(tool.name);
  if (!extensions) built.set(tool.name, (extensions = buildToolExtensions(tool)));
  return extensions;
}

/**
 * The extensions of an MCP tool's offer: payment-identifier only — bazaar describes an HTTP
 * resource (method, body), which an `mcp://tool/<name>` resource is not.
 */
export const mcpToolExtensions = (): Record<string, unknown> => paymentIdentifierExtension();

const paymentIdentifierExtension = () => {
  const { PAYMENT_IDENTIFIER, declarePaymentIdentifierExtension } = paymentIdentifierLibrary();
  return { [PAYMENT_IDENTIFIER]: declarePaymentIdentifierExtension(false) };
};

/** Built once per tool and process: they depend only on the catalogue. */
const built = new Map<string, Record<string, unknown>>();
const offered = new Map<string, readonly Record<string, unknown>[]>();

/**
 * The extensions a paid call's 402 offers, fullest first: the `PAYMENT-REQUIRED` header carries
 * the first that fits its budget (`paymentChallenge`), where a whole description of a tool that
 * takes a file (its example is that file, base64) would not fit behind a reverse proxy, nor in
 * Node's 16 KiB of response headers. Each is a valid bazaar extension (its `info` validates
 * against its `schema`, which names nothing outside itself); what goes, in order: what the
 * schemas repeat (the input schema's `examples`, which `info.input.body` is, and their dialect
 * lines); then the output schema (a
 * caller needs the input first); then, if the example alone is too large (a file, base64), the
 * example and with it the input schema it must validate against (bazaar requires a body example
 * and allows no external `$ref`), for a pointer to the tool's document `GET /v1/tools/{name}`,
 * first with the output schema back, then without; then bazaar itself. `/.well-known/x402` (a
 * body) keeps the fullest.
 */
export function toolOfferExtensions(tool: ToolDefinition): readonly Record<string, unknown>[] {
  let levels = offered.get(tool.name);
  if (!levels) offered.set(tool.name, (levels = buildOfferLevels(tool)));
  return levels;
}

function buildOfferLevels(tool: ToolDefinition): Record<string, unknown>[] {
  const full = toolExtensions(tool);
  const paymentIdentifier = paymentIdentifierExtension();
  const smaller = (
    change: (bazaar: Discovery & { schema: { properties: BazaarProps } }) => void,
  ) => {
    const bazaar = structuredClone(full.bazaar) as Discovery & {
      schema: { properties: BazaarProps };
    };
    change(bazaar);
    return { bazaar, ...paymentIdentifier };
  };
  const pointer = `The input schema and an example: GET /v1/tools/${tool.name}`;
  // What repeats: the example (it is `info.input.body`) and the dialect line (the extension's
  // schema states it) inside the input and output schemas.
  const withoutSchemaExamples = (b: Discovery & { schema: { properties: BazaarProps } }) => {
    const body = b.schema.properties.input.properties.body as Record<string, unknown>;
    delete body.examples;
    delete body.$schema;
    const output = b.schema.properties.output as
      | { properties?: { example?: Record<string, unknown> } }
      | undefined;
    delete output?.properties?.example?.$schema;
  };
  const withoutExample = (b: Discovery & { schema: { properties: BazaarProps } }) => {
    (b.info.input as Record<string, unknown>).body = {};
    b.schema.properties.input.properties.body = { type: "object", description: pointer };
  };
  const withoutOutputSchema = (b: Discovery & { schema: { properties: BazaarProps } }) => {
    b.schema.properties.output = {
      type: "object",
      properties: { type: { type: "string" } },
      required: ["type"],
    };
  };
  return [
    full,
    smaller(withoutSchemaExamples),
    smaller((b) => {
      withoutSchemaExamples(b);
      withoutOutputSchema(b);
    }),
    smaller(withoutExample),
    smaller((b) => {
      withoutExample(b);
      withoutOutputSchema(b);
    }),
    paymentIdentifier,
  ];
}

type BazaarProps = Record<string, unknown> & {
  input: { properties: Record<string, unknown> };
};

function buildToolExtensions(tool: ToolDefinition): Record<string, unknown> {
  const { input, output } = jsonSchemasOf(tool);
  const example = ((input as { examples?: Record<string, unknown>[] }).examples ?? [])[0] ?? {};
  const { bazaar } = bazaarLibrary().declareDiscoveryExtension({
    bodyType: "json",
    input: example,
    inputSchema: input,
  }) as unknown as { bazaar: Discovery };
  // The method is what the reference server extension adds per request; ours is fixed.
  (bazaar.info.input as Record<string, unknown>).method = "POST";
  // The tools' answers depend on their input, so there is no output example to give; the output
  // schema goes where the reference library puts it beside an example (info.output + schema.properties.output).
  bazaar.info.output = { type: "json" };
  bazaar.schema.properties.output = {
    type: "object",
    properties: { type: { type: "string" }, example: { type: "object", ...output } },
    required: ["type"],
  };
  return { bazaar, ...paymentIdentifierExtension() };
}

interface Discovery {
  info: Record<string, unknown>;
  schema: { properties: Record<string, unknown> };
}

const resourceSchema = z.object({
  resource: z.string(),
  type: z.literal("http"),
  method: z.literal("POST"),
  description: z.string(),
  /** Keyed resources (purchases) need an x-api-key besides the payment. */
  requires_api_key: z.boolean(),
  price: z.object({ usd: z.string(), usdc_atomic: z.string() }),
  body: z.record(z.string(), z.unknown()).optional(),
  accepts: z.array(z.record(z.string(), z.unknown())),
  extensions: z.record(z.string(), z.unknown()).optional(),
});

export const wellKnownX402 = defineRoute({
  method: "get",
  path: "/x402",
  summary:
    "Every resource paid with x402 on this gateway: tools (per call), credit packs and plans, with price, networks and v2 requirements.",
  auth: "public",
  response: z.object({
    x402Version: z.literal(2),
    payTo: z.string().nullable(),
    networks: z.array(z.string()),
    resources: z.array(resourceSchema),
  }),
  async handler({ services }) {
    const x402 = services.payments?.config;
    if (!x402)
      return {
        headers: PUBLIC_DOCUMENT_HEADERS,
        body: { x402Version: 2 as const, payTo: null, networks: [], resources: [] },
      };
    const entry = (
      path: string,
      priceAtomic: bigint,
      description: string,
      extra: {
        requiresKey: boolean;
        body?: Record<string, unknown>;
        extensions?: Record<string, unknown>;
      },
    ) => {
      const offer = offerFor(
        x402,
        priceAtomic,
        `${services.config.publicBaseUrl}${path}`,
        description,
      );
      return {
        resource: offer.v2.resource.url,
        type: "http" as const,
        method: "POST" as const,
        description,
        requires_api_key: extra.requiresKey,
        price: { usd: formatUsd(priceAtomic), usdc_atomic: priceAtomic.toString() },
        ...(extra.body ? { body: extra.body } : {}),
        accepts: offer.v2.accepts,
        ...(extra.extensions ? { extensions: extra.extensions } : {}),
      };
    };
    // What can be bought now: a tool the workers cannot run (its provider not configured) is
    // answered 503 tool_unavailable before any payment, so offering it would only send agents
    // to a refusal. GET /v1/tools still lists it, with `available: false` and why.
    const buyable = publicTools(services, TOOLS).filter(
      (tool) => services.pools.unavailableReason(tool.name) === null,
    );
    const resources = [
      ...buyable.map((tool) =>
        entry(`/v1/tools/${tool.name}`, toolPrice(services, tool), `${tool.title}: one call`, {
          requiresKey: false,
          extensions: toolExtensions(tool),
        }),
      ),
      ...Object.entries(PACKS).map(([pack, credits]) =>
        entry(
          "/api/v1/credits/purchase",
          atomicPrice(credits, services.config.creditPriceAtomic),
          `${credits} Toolgate credits`,
          { requiresKey: true, body: { pack } },
        ),
      ),
      ...Object.entries(PLANS).map(([plan, p]) =>
        entry("/api/v1/plans/purchase", p.priceAtomic, `Toolgate ${plan} plan, 30 days`, {
          requiresKey: true,
          body: { plan },
        }),
      ),
    ];
    return {
      headers: PUBLIC_DOCUMENT_HEADERS,
      body: {
        x402Version: 2 as const,
        payTo: x402.payTo,
        networks: x402.networks.flatMap((n) => [n.name, n.caip2]),
        resources,
      },
    };
  },
});

const toolPrice = (services: Services, tool: ToolDefinition) =>
  atomicPrice(tool.cost, services.config.creditPriceAtomic);
