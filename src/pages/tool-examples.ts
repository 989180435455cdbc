import { clip } from "../lib/readable-text.js";
import type { Services } from "../services.js";
import { TOOLS } from "../tools/catalogue/index.js";
import type { ToolDefinition } from "../tools/definition.js";
import { jsonSchemasOf } from "../tools/views.js";

/**
 * The answers shown under each tool on /docs are real: the catalogue's worked example, run once
 * per process against this gateway's own workers (not charged, never awaited by a page view after
 * the first; one that failed is run again in the background, less often each time:
 * docs-builder.ts). Tools of the provider pool are left out: their answers cost the operator money at
 * the AI or search provider; so are the heavy pool's (OCR, charts, sandbox…): loading their
 * libraries takes seconds of the workers' CPU that callers' first calls should not wait behind.
 * Their sections show the output schema only.
 */
export const workedExampleOf = (tool: ToolDefinition): unknown =>
  (jsonSchemasOf(tool).input as { examples?: unknown[] }).examples?.[0];

/** Long strings (a QR code's base64) are cut for the page. */
function abbreviate(value: unknown): unknown {
  if (typeof value === "string") return clip(value, 240);
  if (Array.isArray(value)) return value.map(abbreviate);
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, abbreviate(v)]));
  return value;
}

/**
 * Heavy-pool tools whose libraries load in well under a second: they run in a thread only so a
 * large input cannot hold the shared event loop, and their examples are as cheap as a general
 * tool's, so they are shown too. (The web tools are general tools that read their fetched page
 * in such a thread, src/workers/web/readers.ts: shown as general tools, not listed here.)
 */
const LIGHT_IN_HEAVY_POOL = new Set([
  "yaml-convert",
  "csv-convert",
  "xml-convert",
  "markdown-to-html",
  "html-to-markdown",
  "html-sanitize",
  "readability-extract",
  "jsonpath-query",
  "date-parse",
  "regex-test",
  "json-schema-validate",
  "text-diff",
  "qr-code",
  "barcode-generate",
  "image-metadata",
]);

/** The tools whose worked example is run for the page (found when the page is first built, not at start-up). */
export const exampleTools = (): ToolDefinition[] =>
  TOOLS.filter(
    (tool) =>
      (tool.pool === "general" || LIGHT_IN_HEAVY_POOL.has(tool.name)) &&
      workedExampleOf(tool) !== undefined,
  );

/** At most this many examples run at once, so building the page never floods the workers. */
const EXAMPLES_AT_ONCE = 4;

async function answerOf(
  services: Pick<Services, "pools">,
  tool: ToolDefinition,
  timeoutMs: number,
): Promise<unknown> {
  const res = await fetch(`${services.pools.url(tool.pool)}/tools/${tool.name}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(workedExampleOf(tool)),
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!res.ok) throw new Error(`${tool.name} answered ${res.status}`);
  return abbreviate(await res.json());
}

/**
 * Each example of `tools` is tried twice (a worker still warming up on a busy machine), then left
 * out; the page runs those left out again later, on their own (docs-builder.ts).
 */
export async function collectToolExamples(
  services: Pick<Services, "pools">,
  tools: readonly ToolDefinition[] = exampleTools(),
  timeoutMs = 10_000,
): Promise<Map<string, unknown>> {
  const answers = new Map<string, unknown>();
  const queue = [...tools];
  const runOne = async (tool: ToolDefinition) => {
    for (let attempt = 1; attempt <= 2; attempt++) {
      try {
        answers.set(tool.name, await answerOf(services, tool, timeoutMs));
        return;
      } catch {
        if (attempt === 1) await new Promise((r) => setTimeout(r, 1000));
      }
    }
  };
  await Promise.all(
    Array.from({ length: EXAMPLES_AT_ONCE }, async () => {
      for (let tool = queue.shift(); tool; tool = queue.shift()) await runOne(tool);
    }),
  );
  return answers;
}
