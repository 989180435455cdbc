import { readFileSync } from "node:fs";
import { validateHeaderName, validateHeaderValue } from "node:http";
import { lazyRequire } from "../../lib/lazy-require.js";
import { findTool } from "../catalogue/index.js";
import { SchemaCompiler, SchemaError } from "./json-schema.js";
import {
  ANY_OBJECT,
  operatorToolEntry,
  RESERVED_TOOL_NAMES,
  type UpstreamToolSpec,
} from "./spec.js";
import { checkUpstreamForm, hostReasonWithoutDns } from "./target.js";

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
/** The YAML parser, loaded when there is a file to read (most gateways have none). */
const yaml = lazyRequire<typeof import("yaml")>("yaml");

export function loadToolsFile(
  path: string,
  env: NodeJS.ProcessEnv,
  allowPrivate: boolean,
  problems: string[],
): UpstreamToolSpec[] {
  const report = (message: string) => problems.push(`TOOLS_FILE ${path}: ${message}`);
  let document: unknown;
  try {
    document = yaml().parse(readFileSync(path, "utf8"));
  } catch (err) {
    report(
      (err as NodeJS.ErrnoException).code === "ENOENT"
        ? "no such file"
        : `not valid YAML or JSON: ${(err as Error).message.split("\n")[0]}`,
    );
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
    const name = (raw as { name?: unknown } | null)?.name;
    const label = `tools[${index}]${typeof name === "string" ? ` (${name})` : ""}`;
    const read = readEntry(raw, { env, allowPrivate, compiler, seen });
    if (Array.isArray(read)) for (const problem of read) report(`${label}: ${problem}`);
    else tools.push(read);
  });
  return tools;
}

/** One entry as a tool, or what is wrong with it (field: problem). */
function readEntry(
  raw: unknown,
  context: {
    env: NodeJS.ProcessEnv;
    allowPrivate: boolean;
    compiler: SchemaCompiler;
    seen: Set<string>;
  },
): UpstreamToolSpec | string[] {
  const parsed = operatorToolEntry.safeParse(raw);
  if (!parsed.success)
    return parsed.error.issues.map(
      (issue) => `${issue.path.join(".") || "entry"}: ${issue.message}`,
    );
  const entry = parsed.data;
  if (findTool(entry.name) || RESERVED_TOOL_NAMES.has(entry.name))
    return [`name: ${entry.name} is already a catalogue tool's name`];
  if (context.seen.has(entry.name)) return [`name: ${entry.name} is declared twice`];
  context.seen.add(entry.name);
  const form = checkUpstreamForm(entry.url, context.allowPrivate);
  if (!form.ok) return [`url: ${form.reason}`];
  // A host refused on its face (127.0.0.1, 169.254.169.254, localhost) would fail every call, the
  // tool listed all the while: refused here. A name is judged by what it resolves to, on each call.
  const refused = hostReasonWithoutDns(form.url, context.allowPrivate);
  if (refused) return [`url: ${refused}: every call to it would be refused`];
  const outputSchema = entry.output_schema ?? { ...ANY_OBJECT };
  for (const [field, schema] of [
    ["input_schema", entry.input_schema],
    ["output_schema", outputSchema],
  ] as const) {
    try {
      context.compiler.compile(schema);
    } catch (err) {
      if (err instanceof SchemaError) return [`${field}: ${err.message}`];
      throw err;
    }
  }
  const headers: Record<string, string> = {};
  const secrets: string[] = [];
  for (const [name, value] of Object.entries(entry.headers)) {
    const referenced = [...value.matchAll(ENV_REFERENCE)].map((m) => m[1]!);
    const missing = referenced.filter((v) => context.env[v] === undefined);
    if (missing.length)
      return [`headers.${name}: ${missing.join(", ")} not set in the environment`];
    const filled = value.replace(ENV_REFERENCE, (_m, v: string) => context.env[v]!);
    // Checked by Node's own rules, as the request will be: a value it refuses (a secret read from a
    // file with its trailing newline) failed every call of the tool inside the gateway (500). The
    // value is never printed: it holds a secret.
    try {
      validateHeaderName(name);
      validateHeaderValue(name, filled);
    } catch {
      const from = referenced.length ? ` once ${referenced.join(", ")} is put in` : "";
      return [
        `headers.${name}: not a valid HTTP header value${from} (a header cannot hold a line break or other control character; a value read from a file may end in a newline)`,
      ];
    }
    headers[name] = filled;
    secrets.push(...referenced.map((v) => context.env[v]!));
  }
  return {
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
    secrets,
  };
}

/** `${NAME}` in a header value: read from the environment at start-up. */
const ENV_REFERENCE = /\$\{([A-Z0-9_]+)\}/g;
