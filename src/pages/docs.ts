import { ERRORS } from "../http/errors.js";
import { TAGS } from "../http/openapi.js";
import type { ToolDefinition } from "../tools/definition.js";
import { priceOf } from "../tools/pricing.js";
import { jsonSchemasOf } from "../tools/views.js";
import {
  OPERATION_EXAMPLES,
  PATH_VARIABLES,
  curlFor,
  type OperationExample,
} from "./docs-examples.js";
import { pythonSnippet, typescriptSnippet } from "./docs-snippets.js";
import { esc, layout } from "./respond.js";
import { schemaExampleOf } from "./schema-example.js";
import { workedExampleOf } from "./tool-examples.js";
import { TRY_IT_KEY_FIELD, tryItForm } from "./try-it.js";

/**
 * /docs: the API reference, rendered on the server from the OpenAPI document (so it cannot
 * drift from what the API validates), grouped by tag, with a curl that works for every
 * operation, each tool's schema, price and a real answer to its worked example. No script or
 * style from elsewhere: it works offline.
 */
// biome-ignore lint/suspicious/noExplicitAny: JSON Schema fragments of the OpenAPI document, read field by field for display
type Json = Record<string, any>;

const SAFE_INTEGER = Number.MAX_SAFE_INTEGER;

/** The constraints worth reading: not zod's ±2^53 integer bounds, not a 300-character e-mail regex. */
function constraintsOf(schema: Json): string[] {
  const out: string[] = [];
  if (schema.enum)
    out.push(
      `one of ${schema.enum.map((v: unknown) => `<code>${esc(JSON.stringify(v))}</code>`).join(", ")}`,
    );
  if (schema.const !== undefined)
    out.push(`always <code>${esc(JSON.stringify(schema.const))}</code>`);
  if (schema.format) out.push(`format ${esc(schema.format)}`);
  if (schema.pattern && !schema.format && String(schema.pattern).length <= 60)
    out.push(`pattern <code>${esc(schema.pattern)}</code>`);
  const min = schema.minimum ?? schema.exclusiveMinimum;
  const max = schema.maximum ?? schema.exclusiveMaximum;
  if (min !== undefined && Math.abs(min) < SAFE_INTEGER)
    out.push(`${schema.exclusiveMinimum !== undefined ? ">" : "≥"} ${min}`);
  if (max !== undefined && Math.abs(max) < SAFE_INTEGER)
    out.push(`${schema.exclusiveMaximum !== undefined ? "<" : "≤"} ${max}`);
  if (schema.minLength) out.push(`at least ${schema.minLength} characters`);
  if (schema.maxLength !== undefined)
    out.push(`at most ${schema.maxLength.toLocaleString("en")} characters`);
  if (schema.minItems) out.push(`at least ${schema.minItems} items`);
  if (schema.maxItems !== undefined) out.push(`at most ${schema.maxItems} items`);
  if (schema.default !== undefined)
    out.push(`default <code>${esc(JSON.stringify(schema.default))}</code>`);
  return out;
}

/** A field's description, then its constraints apart (a description ends in its own full stop). */
function notesOf(description: string | undefined, schema: Json): string {
  const constraints = constraintsOf(schema).join("; ");
  if (!description) return constraints;
  return constraints
    ? `${esc(description)} <span class="muted">(${constraints})</span>`
    : esc(description);
}

function typeOf(schema: Json): string {
  if (schema.type === "array") return `array of ${schema.items ? typeOf(schema.items) : "any"}`;
  if (Array.isArray(schema.type)) return schema.type.join(" | ");
  if (schema.type) return schema.type;
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return alternatives.map(typeOf).join(" | ");
  if (schema.enum) return typeof schema.enum[0];
  return "any";
}

/** One row per field, nested objects as dotted names (three levels deep at most). */
function fieldRows(schema: Json, prefix = "", depth = 0): string[] {
  const properties = (schema.type === "array" ? schema.items?.properties : schema.properties) as
    | Record<string, Json>
    | undefined;
  if (!properties || depth > 2) return [];
  const required = new Set<string>(
    (schema.type === "array" ? schema.items?.required : schema.required) ?? [],
  );
  const arrayMark = schema.type === "array" ? "[]" : "";
  return Object.entries(properties).flatMap(([name, field]) => {
    const path = `${prefix}${arrayMark}${prefix || arrayMark ? "." : ""}${name}`.replace(/^\./, "");
    const notes = notesOf(field.description, field);
    return [
      `<tr><td><code>${esc(path)}</code>${required.has(name) ? ' <span class="muted">required</span>' : ""}</td><td>${esc(typeOf(field))}</td><td>${notes}</td></tr>`,
      ...fieldRows(field, path, depth + 1),
    ];
  });
}

function fieldsTable(schema: Json | undefined, caption: string): string {
  if (!schema) return "";
  const rows = fieldRows(schema);
  if (rows.length === 0)
    return `<h4>${caption}</h4><p class="muted">${esc(typeOf(schema))}${schema.description ? ` — ${esc(schema.description)}` : ""}</p>`;
  return `<h4>${caption}</h4><table><thead><tr><th>Field</th><th>Type</th><th>Notes</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

// Every example is a <pre tabindex="0">: a long one scrolls sideways, and only an element that takes
// the focus can be scrolled from the keyboard.
const pretty = (value: unknown) =>
  `<pre tabindex="0"><code>${esc(JSON.stringify(value, null, 2))}</code></pre>`;

function curlBlock(curl: string, error?: { status: number; why: string }): string {
  return `<pre tabindex="0" class="curl" data-expect="${error ? error.status : "2xx"}"><code>${esc(curl)}</code></pre>${error ? `<p class="muted">This example answers <strong>${error.status}</strong> on purpose: ${esc(error.why)}</p>` : ""}`;
}

function errorList(responses: Json): string {
  const errors = Object.entries(responses).filter(([status]) => !status.startsWith("2"));
  if (errors.length === 0) return "";
  return `<h4>Errors</h4><ul>${errors.map(([status, r]) => `<li><code>${esc(status)}</code> ${esc((r as Json).description)}</li>`).join("")}</ul>`;
}

const anchor = (method: string, path: string) =>
  `${method}-${path}`.replace(/[^a-zA-Z0-9]+/g, "-").replace(/-$/, "");
const authOf = (op: Json): "key" | "admin" | "none" | "optional" | "metrics" => {
  const schemes = (op.security ?? []) as Json[];
  if (schemes.length === 0) return "none";
  if (schemes.some((s) => s.MetricsToken)) return "metrics";
  if (schemes.some((s) => Object.keys(s).length === 0)) return "optional";
  return schemes[0]!.AdminKey ? "admin" : "key";
};
const authText: Record<string, string> = {
  none: "none (public)",
  key: "<code>x-api-key</code> (or <code>Authorization: Bearer</code>): your API key",
  admin: "<code>x-api-key</code>: the operator's <code>ADMIN_API_KEY</code>",
  optional:
    "<code>x-api-key</code> (or <code>Authorization: Bearer</code>), or no key and an x402 payment",
  metrics:
    "none, unless the gateway sets <code>METRICS_TOKEN</code>: then <code>Authorization: Bearer</code> that token",
};

/** One webhook event: when it is sent and the fields of its `data`. */
function eventSection(event: string, op: Json): string {
  const envelope = op.requestBody?.content?.["application/json"]?.schema as Json;
  return `<section id="event-${esc(event)}" class="operation">
<h3>Event <code>${esc(event)}</code></h3>
<p>${esc(op.summary)} Body: <code>{"id", "event", "timestamp", "data"}</code>.</p>
${fieldsTable(envelope.properties.data, "data")}
</section>`;
}

/** An example's error as this gateway answers it: a 402 offer only where it takes x402 payments. */
function errorShown(
  example: OperationExample | undefined,
  x402Networks: readonly string[] | null,
): OperationExample["error"] {
  if (example?.error?.status !== 402 || x402Networks?.length) return example?.error;
  return {
    status: 501,
    why: "this gateway takes no x402 payments (payments_not_enabled): its operator grants credits instead.",
  };
}

function operationSection(
  doc: Json,
  method: string,
  path: string,
  op: Json,
  x402Networks: readonly string[] | null,
): string {
  const key = `${method.toUpperCase()} ${path}`;
  const example = OPERATION_EXAMPLES[key];
  const auth = authOf(op);
  const body = op.requestBody?.content?.["application/json"]?.schema;
  const [okStatus, ok] =
    Object.entries(op.responses as Json).find(([status]) => status.startsWith("2")) ?? [];
  const okSchema = ok?.content?.["application/json"]?.schema;
  const params = ((op.parameters ?? []) as Json[]).filter((p) => p.in !== "header");
  const variables = Object.entries(PATH_VARIABLES).filter(
    ([pattern, v]) =>
      v.variable &&
      (pattern.startsWith("{")
        ? path.includes(pattern)
        : path.startsWith(pattern) && /\{(?:id|name)\}/.test(path)),
  );
  return `<section id="${anchor(method, path)}" class="operation">
<h3><span class="method ${method}">${method}</span> <code>${esc(path)}</code></h3>
<p>${esc(op.summary)}</p>${op.description ? `<p>${esc(op.description)}</p>` : ""}
<p>Authentication: ${authText[auth]}</p>
${params.length ? `<h4>Parameters</h4><table><tbody>${params.map((p) => `<tr><td><code>${esc(p.name)}</code> <span class="muted">${esc(p.in)}${p.required ? ", required" : ""}</span></td><td>${esc(typeOf(p.schema ?? {}))}</td><td>${notesOf(p.description, p.schema ?? {})}</td></tr>`).join("")}</tbody></table>` : ""}
${body ? fieldsTable(body, "Request body") : ""}
<h4>Example</h4>
${variables.length ? `<p class="muted">${variables.map(([, v]) => `<code>$${v.variable}</code>: ${esc(v.from)}`).join("; ")}.</p>` : ""}
${curlBlock(curlFor({ baseUrl: doc.servers[0].url, method, path, auth: auth === "metrics" ? "none" : auth, example }), errorShown(example, x402Networks))}
${example?.response ? `<h4>Answer ${esc(okStatus)} (example)</h4>${pretty(example.response)}` : ""}
${okSchema ? fieldsTable(okSchema, `Answer ${esc(okStatus)}`) : ""}
${errorList(op.responses)}
</section>`;
}

/** Where a tool's answer comes from, for a section that shows none. */
const answerSource = (tool: ToolDefinition) =>
  tool.jsonSchemas
    ? "this gateway's operator's endpoint for the tool"
    : tool.pool === "provider"
      ? "the configured AI or search provider"
      : "the workers";

function toolSection(
  doc: Json,
  tool: ToolDefinition,
  creditPriceAtomic: bigint,
  answers: Map<string, unknown>,
  basePath: string,
): string {
  const op = doc.paths[`/v1/tools/${tool.name}`].post as Json;
  const { input, output } = jsonSchemasOf(tool);
  const price = priceOf(tool, creditPriceAtomic);
  // A catalogue tool shows its worked example; a tool defined by JSON Schema (an operator's) one
  // from its schema, promised to answer 2xx only when the schema accepts it.
  const worked = workedExampleOf(tool);
  const { body: example, accepted } =
    worked === undefined && tool.jsonSchemas
      ? schemaExampleOf(input, (value) => tool.input.safeParse(value).success)
      : { body: worked, accepted: worked !== undefined };
  const answer = answers.get(tool.name);
  const refused = accepted
    ? undefined
    : {
        status: 422,
        why: "this tool's input schema gives no example the page could build; fill in the input fields above.",
      };
  return `<section id="tool-${esc(tool.name)}" class="tool">
<h3>${esc(tool.title)} <code>POST /v1/tools/${esc(tool.name)}</code></h3>
<p>${esc(tool.description)}</p>
<p><strong>Price:</strong> ${price.credits} credit${price.credits === 1 ? "" : "s"} ($${esc(price.usd)}, ${esc(price.usdc_atomic)} USDC atomic units) per successful call; a failed call is refunded.${tool.aliases.length ? ` <strong>Aliases:</strong> ${tool.aliases.map((a) => `<code>${esc(a)}</code>`).join(", ")}.` : ""}</p>
${fieldsTable(input as Json, "Input")}
<h4>Example</h4>
${curlBlock(curlFor({ baseUrl: doc.servers[0].url, method: "post", path: `/v1/tools/${tool.name}`, auth: "key", body: example }), refused)}
<h4>With the client libraries</h4>
<pre tabindex="0" class="snippet" data-lang="typescript"><code>${esc(typescriptSnippet(tool.name, example))}</code></pre>
<pre tabindex="0" class="snippet" data-lang="python"><code>${esc(pythonSnippet(tool.name, example))}</code></pre>
${tryItForm(basePath, tool.name, example)}
${answer !== undefined ? `<h4>Answer 200 (this gateway's answer to the example)</h4>${pretty(answer)}` : `<p class="muted">The answer comes from ${esc(answerSource(tool))}; its shape is below.</p>`}
${fieldsTable(output as Json, "Output")}
${errorList(op.responses)}
</section>`;
}

/** `x402Networks`: what the keyless example is answered depends on whether this gateway takes x402. */
function introduction(doc: Json, x402Networks: readonly string[] | null, basePath: string): string {
  const base = doc.servers[0].url;
  const keylessCall = `curl -sS -X POST "${base}/v1/tools/hash" \\\n  -H "content-type: application/json" \\\n  -d '{"text":"hello world"}'`;
  return `<h1>${esc(doc.info.title)} reference</h1>
<p>${esc(doc.info.description)}</p>
<p>Base URL: <code>${esc(base)}</code>. Machine-readable: <a href="${basePath}/openapi.json">${basePath}/openapi.json</a> (OpenAPI ${esc(doc.openapi)}); for language models: <a href="${basePath}/llms.txt">${basePath}/llms.txt</a>. Changes: <a href="${basePath}/changelog">changelog</a> (<a href="${basePath}/changelog.rss">RSS</a>). Health: <a href="${basePath}/status">status</a>.</p>
<h2 id="authentication">Authentication</h2>
<p>Send your API key in the <code>x-api-key</code> header. The examples read it from the environment, so put it there first:</p>
<pre tabindex="0"><code>export TOOLGATE_API_KEY=tg_live_…    # from sign-up, shown once
export TOOLGATE_ADMIN_KEY=…          # operators only: the ADMIN_API_KEY</code></pre>
${TRY_IT_KEY_FIELD}
${
  x402Networks?.length
    ? `<p>Without a key, a tool call answers <strong>402</strong> with an x402 offer (USDC on ${esc(x402Networks.join(", "))}); an x402 client pays it and retries. The same call, keyless:</p>
${curlBlock(keylessCall, { status: 402, why: "no key and no payment: the answer carries the x402 offer (v1 body, v2 PAYMENT-REQUIRED header)." })}`
    : `<p>This gateway takes no x402 payments: a tool call without a key is refused, <strong>401</strong> <code>missing_api_key</code>. The same call, keyless:</p>
${curlBlock(keylessCall, { status: 401, why: "no key, and this gateway takes no x402 payments." })}`
}
<h2 id="errors">Errors</h2>
<p>Every error has one shape: <code>{"error": {"type", "code", "message", "param"?, "request_id"}}</code>. Branch on <code>code</code>:</p>
<div class="table-scroll" tabindex="0" role="region" aria-label="Error codes, scrollable"><table><thead><tr><th>Status</th><th>Code</th><th>Type</th></tr></thead><tbody>${Object.entries(
    ERRORS,
  )
    .sort((a, b) => a[1].status - b[1].status)
    .map(
      ([code, e]) =>
        `<tr><td>${e.status}</td><td><code>${esc(code)}</code></td><td>${esc(e.type)}</td></tr>`,
    )
    .join("")}</tbody></table></div>
<p>Rate limits are per account and tier (Free 60/min, Starter and Pro 300/min, Business 1,000/min); a keyed answer carries <code>RateLimit-Limit</code>, <code>RateLimit-Remaining</code> and <code>RateLimit-Reset</code>, and a 429 carries <code>Retry-After</code>.</p>
<p>A successful tool call's answer also says what it cost (<code>X-Credits-Charged</code>, <code>X-Credits-Remaining</code>) and where its time went, in milliseconds: <code>Server-Timing: tool;dur=…, gateway;dur=…</code> (the tool's worker, and everything else this gateway did), with <code>payment;dur=…</code> for a call paid with x402 (verified, settled on chain, credited); a replay under an <code>Idempotency-Key</code> says <code>Idempotent-Replayed: true</code> and has <code>gateway</code> alone.</p>
<h2 id="versioning">Versioning</h2>
<p>The version is in the path (<code>/v1/</code>, <code>/api/v1/</code>). Within a version fields are only added. A deprecated version answers with <code>Deprecation</code>, <code>Sunset</code> (six months after its successor shipped) and <code>Link: &lt;…/changelog&gt;; rel="deprecation"</code>; after the sunset it answers 410 <code>version_retired</code> naming the successor.</p>`;
}

/** `tools`: every public tool — the catalogue's and the operator's (TOOLS_FILE) — as GET /v1/tools lists them. */
export function renderDocsPage(
  doc: Json,
  options: {
    creditPriceAtomic: bigint;
    toolAnswers: Map<string, unknown>;
    tools: readonly ToolDefinition[];
    /** The networks this gateway takes x402 payments on; null when it takes none. */
    x402Networks: readonly string[] | null;
    /** config.basePath, before the page's own addresses and the Try it forms' endpoints. */
    basePath: string;
  },
): string {
  const byTag = new Map<string, string[]>(TAGS.map((t) => [t.name, []]));
  const toc = new Map<string, string[]>(TAGS.map((t) => [t.name, []]));
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    if (/^\/v1\/tools\/[a-z0-9-]+$/.test(path)) continue; // each tool has its own section below
    for (const [method, op] of Object.entries(item)) {
      const tag = (op.tags?.[0] as string) ?? "Operations";
      byTag.get(tag)?.push(operationSection(doc, method, path, op, options.x402Networks));
      toc
        .get(tag)
        ?.push(
          `<li><a href="#${anchor(method, path)}"><span class="method ${method}">${method}</span> <code>${esc(path)}</code></a></li>`,
        );
    }
  }
  // What each webhook delivery carries (the document's `webhooks`), beside the webhook routes.
  for (const [event, item] of Object.entries((doc.webhooks ?? {}) as Record<string, Json>))
    byTag.get("Webhooks")?.push(eventSection(event, item.post as Json));
  const tools = options.tools.map((tool) =>
    toolSection(doc, tool, options.creditPriceAtomic, options.toolAnswers, options.basePath),
  );
  const groups = TAGS.map((tag) => {
    const toolList =
      tag.name === "Tools"
        ? `<h3>Every tool</h3><table><thead><tr><th>Tool</th><th>Price</th><th>What it does</th></tr></thead><tbody>${options.tools.map((t) => `<tr><td><a href="#tool-${esc(t.name)}"><code>${esc(t.name)}</code></a></td><td>${t.cost} cr ($${esc(priceOf(t, options.creditPriceAtomic).usd)})</td><td>${esc(t.title)}</td></tr>`).join("")}</tbody></table>`
        : "";
    return `<h2 id="tag-${tag.name.toLowerCase()}">${esc(tag.name)}</h2><p>${esc(tag.description)}</p>${byTag.get(tag.name)!.join("\n")}${toolList}${tag.name === "Tools" ? tools.join("\n") : ""}`;
  });
  const nav = TAGS.map(
    (tag) =>
      `<li><a href="#tag-${tag.name.toLowerCase()}">${esc(tag.name)}</a><ul>${toc.get(tag.name)!.join("")}${tag.name === "Tools" ? options.tools.map((t) => `<li><a href="#tool-${esc(t.name)}"><code>${esc(t.name)}</code></a></li>`).join("") : ""}</ul></li>`,
  ).join("");
  return layout({
    title: `${doc.info.title} reference`,
    wide: true,
    basePath: options.basePath,
    head: `<script src="${options.basePath}/docs/try-it.js" defer></script>`,
    body: `${introduction(doc, options.x402Networks, options.basePath)}<h2 id="contents">Contents</h2><nav><ul>${nav}</ul></nav>${groups.join("\n")}`,
  });
}
