import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { findTool } from "../catalogue/index.js";
import { SchemaCompiler, SchemaError } from "./json-schema.js";
import { ANY_OBJECT, operatorToolEntry, RESERVED_TOOL_NAMES, type UpstreamToolSpec } from "./spec.js";
import { checkUpstreamForm } from "./target.js";

/**
 * TOOLS_FILE: the operator's upstream tools, in YAML or JSON (YAML's parser reads both):
 *
 *   tools:
 *     - name: weather
 *       description: Current weather for a city.
 *       url: https://api.example.com/weather
 *       input_schema: { type: object, properties: { city: { type: string } }, required: [city] }
 *       price_credits: 3
 *       headers: { Authorization: "Bearer ${WEATHER_API_KEY}" }
 *
 * Read once at start-up; every problem is reported, each naming its entry, and the gateway does
 * not start until the file is right.
 */
export function loadToolsFile(path: string, env: NodeJS.ProcessEnv, allowPrivate: boolean, problems: string[]): UpstreamToolSpec[] {
  const report = (message: string) => problems.push(`TOOLS_FILE ${path}: ${message}`);
  let document: unknown;
  try {
    document = parseYaml(readFileSync(path, "utf8"));
  } catch (err) {
    report((err as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : `not valid YAML or JSON: ${(err as Error).message.split("\n")[0]}`);
    return [];
  }
  const entries = (document as { tools?: unknown } | null)?.tools;
  if (!Array.isArray(entries)) {
    report('must be an object with a "tools" list');
    return [];
  }
  const compiler = new SchemaCompiler();
  const seen = new Set<string>();
  const tools: UpstreamToolSpec[] = [];
  entries.forEach((raw, index) => {
    const label = `tools[${index}]${typeof (raw as { name?: unknown })?.name === "string" ? ` (${(raw as { name: string }).name})` : ""}`;
    const bad = (message: string) => report(`${label}: ${message}`);
    const parsed = operatorToolEntry.safeParse(raw);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) bad(`${issue.path.join(".") || "entry"}: ${issue.message}`);
      return;
    }
    const entry = parsed.data;
    if (findTool(entry.name) || RESERVED_TOOL_NAMES.has(entry.name)) return bad(`name: ${entry.name} is already a catalogue tool's name`);
    if (seen.has(entry.name)) return bad(`name: ${entry.name} is declared twice`);
    seen.add(entry.name);
    const form = checkUpstreamForm(entry.url, allowPrivate);
    if (!form.ok) return bad(`url: ${form.reason}`);
    const outputSchema = entry.output_schema ?? { ...ANY_OBJECT };
    for (const [field, schema] of [["input_schema", entry.input_schema], ["output_schema", outputSchema]] as const) {
      try {
        compiler.compile(schema);
      } catch (err) {
        if (err instanceof SchemaError) return bad(`${field}: ${err.message}`);
        throw err;
      }
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(entry.headers)) {
      const missing = [...value.matchAll(/\$\{([A-Z0-9_]+)\}/g)].map((m) => m[1]!).filter((v) => env[v] === undefined);
      if (missing.length) return bad(`headers.${name}: ${missing.join(", ")} not set in the environment`);
      headers[name] = value.replace(/\$\{([A-Z0-9_]+)\}/g, (_m, v: string) => env[v]!);
    }
    tools.push({
      name: entry.name,
      title: entry.title ?? entry.name,
      description: entry.description,
      url: form.url.href,
      inputSchema: entry.input_schema,
      outputSchema,
      priceCredits: entry.price_credits,
      timeoutMs: entry.timeout_ms,
      category: entry.category,
      tags: entry.tags,
      headers,
    });
  });
  return tools;
}
