/**
 * The example input /docs shows for a tool defined by JSON Schema (an operator's, TOOLS_FILE),
 * which has no worked example of the catalogue's: the first of the schema's own `examples`,
 * `example` or `default` that the schema accepts; else the smallest body built from the schema
 * (its required fields, each from its own example, default, const or first enum value, else the
 * least value of its type within its bounds) when that is accepted; else `{}`. `accepts` is the
 * gateway's own validation of the tool's input (the one a call goes through, compiled once with
 * the tool): `accepted` says whether it takes the body, and only then does the page promise that
 * the curl answers 2xx.
 */
export function schemaExampleOf(
  schema: unknown,
  accepts: (value: unknown) => boolean,
): { body: unknown; accepted: boolean } {
  const s = (schema ?? {}) as Record<string, unknown>;
  const candidates = [
    ...(Array.isArray(s.examples) ? s.examples.slice(0, 1) : []),
    s.example,
    s.default,
  ].filter((value) => value !== undefined);
  const built = minimalValue(schema, 0);
  if (built) candidates.push(built.value);
  for (const body of candidates) if (accepts(body)) return { body, accepted: true };
  return { body: {}, accepted: accepts({}) };
}

const MAX_DEPTH = 8;

/** The least value the schema describes, as far as a few keywords tell; null when they do not. */
function minimalValue(schema: unknown, depth: number): { value: unknown } | null {
  if (depth > MAX_DEPTH || schema === null || typeof schema !== "object" || Array.isArray(schema))
    return null;
  const s = schema as Record<string, unknown>;
  if (s.const !== undefined) return { value: s.const };
  if (Array.isArray(s.examples) && s.examples.length > 0) return { value: s.examples[0] };
  if (s.example !== undefined) return { value: s.example };
  if (s.default !== undefined) return { value: s.default };
  if (Array.isArray(s.enum) && s.enum.length > 0) return { value: s.enum[0] };
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  const num = (key: string) => (typeof s[key] === "number" ? (s[key] as number) : undefined);
  switch (type ?? (s.properties ? "object" : undefined)) {
    case "object": {
      const properties = (s.properties ?? {}) as Record<string, unknown>;
      const value: Record<string, unknown> = {};
      for (const name of Array.isArray(s.required) ? (s.required as string[]) : []) {
        const field = minimalValue(properties[name] ?? {}, depth + 1);
        if (!field) return null;
        value[name] = field.value;
      }
      return { value };
    }
    case "array": {
      const count = num("minItems") ?? 0;
      if (count === 0) return { value: [] };
      const item = minimalValue(s.items, depth + 1);
      return item ? { value: Array(count).fill(item.value) } : null;
    }
    case "string": {
      if (s.pattern !== undefined || s.format !== undefined) return null;
      const min = num("minLength") ?? 0;
      const max = num("maxLength") ?? Number.POSITIVE_INFINITY;
      // "example", cut to the longest length allowed, or filled out to the shortest.
      return { value: "example".slice(0, Math.max(min, max)).padEnd(min, "x") };
    }
    case "integer":
    case "number": {
      const exclusive = num("exclusiveMinimum");
      const min = num("minimum") ?? (exclusive !== undefined ? Math.floor(exclusive) + 1 : 0);
      return { value: min };
    }
    case "boolean":
      return { value: false };
    case "null":
      return { value: null };
    default:
      return null;
  }
}
