import type { Services } from "../services.js";
import { TOOLS } from "../tools/catalogue/index.js";
import type { ToolDefinition } from "../tools/definition.js";
import { jsonSchemasOf } from "../tools/views.js";

/**
 * The answers shown under each tool on /docs are real: the catalogue's worked example, run once
 * per process against this gateway's own workers (not charged, never on a page view after the
 * first). Tools of the provider pool are left out: their answers cost the operator money at
 * the AI or search provider, so their sections show the output schema only.
 */
export const workedExampleOf = (tool: ToolDefinition): unknown => (jsonSchemasOf(tool).input as { examples?: unknown[] }).examples?.[0];

/** Long strings (a QR code's base64) are cut for the page. */
function abbreviate(value: unknown): unknown {
  if (typeof value === "string") return value.length > 240 ? `${value.slice(0, 240)}…` : value;
  if (Array.isArray(value)) return value.map(abbreviate);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, abbreviate(v)]));
  return value;
}

/** The tools whose worked example is run for the page. */
export const EXAMPLE_TOOLS = TOOLS.filter((tool) => tool.pool !== "provider" && workedExampleOf(tool) !== undefined);

export async function collectToolExamples(services: Pick<Services, "pools">, timeoutMs = 5000): Promise<Map<string, unknown>> {
  const answers = new Map<string, unknown>();
  await Promise.all(
    EXAMPLE_TOOLS.map(async (tool) => {
      const example = workedExampleOf(tool);
      try {
        const res = await fetch(`${services.pools.url(tool.pool)}/tools/${tool.name}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(example),
          signal: AbortSignal.timeout(timeoutMs),
        });
        if (res.ok) answers.set(tool.name, abbreviate(await res.json()));
      } catch {
        // Left out of the page; the next build tries again.
      }
    }),
  );
  return answers;
}
