/** How a setting's text is read, for the gateway's settings (config.ts) and the tool workers' (workers/config.ts) alike; their numbers as lib/decimal-text.ts reads them. */

/**
 * The environment as every setting is read from it: a variable that is empty or only white space
 * is unset, whatever reads it (a schema, a network's settings, TOOLS_FILE's `${NAME}`), except
 * those named in `emptyIsAValue`. An optional setting then takes its default, and a required one
 * is missing, named. docker compose passes `${VAR:-}` as an empty string for each optional setting
 * .env leaves out, and an env file's `VAR=` does the same: refused (a string) or read as 0 (a
 * number), they stopped the shipped topology or changed what it did.
 */
export function withoutBlankValues(
  env: NodeJS.ProcessEnv,
  emptyIsAValue: ReadonlySet<string> = new Set(),
): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(env).filter(
      ([name, value]) => value !== undefined && (value.trim() !== "" || emptyIsAValue.has(name)),
    ),
  );
}

/** A comma-separated list setting's entries, trimmed, without the empty ones (`a, ,b,`: a and b). */
export const listEntries = (value: string): string[] =>
  value
    .split(",")
    .map((entry) => entry.trim())
    .filter(Boolean);
