import type { z } from "zod";

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

/**
 * Settings a process refuses to start with, each problem one line naming the setting (never its
 * value: it can be a secret, and nothing is known yet to redact it with). The gateway's
 * (config.ts) and the tool workers' (workers/config.ts) alike.
 */
export class ConfigError extends Error {
  constructor(public readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  }
}

/** A schema's refusals as problems, `NAME: why` each. */
export const schemaProblems = (error: z.ZodError): string[] =>
  error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);

/** The exit code of a process whose settings are refused (sysexits' EX_CONFIG). */
export const CONFIG_ERROR_EXIT = 78;

/**
 * Reads a process's settings with `load`; refused, it writes the problems and exits 78
 * (EX_CONFIG): a supervisor (systemd's RestartPreventExitStatus, an operator) tells a
 * configuration to fix from a crash, where a ZodError's stack said neither which setting nor why.
 */
export function settingsOrExit<T>(load: () => T): T {
  try {
    return load();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(CONFIG_ERROR_EXIT);
    }
    throw err;
  }
}

/** The levels LOG_LEVEL takes (pino's, and silent): any other stopped the logger's creation with a stack. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

/**
 * Whether a URL setting parses, with one of `protocols` and a host. Checked with the schema, not
 * where the URL is first used: ioredis, pg and fetch threw a stack after the workers started.
 */
export const isUrl =
  (...protocols: string[]) =>
  (value: string): boolean => {
    try {
      const url = new URL(value);
      return protocols.includes(url.protocol) && url.hostname !== "";
    } catch {
      return false;
    }
  };

export const isHttpUrl = isUrl("http:", "https:");
