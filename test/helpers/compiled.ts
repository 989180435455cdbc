import { join } from "node:path";

/** The repository's root. */
export const REPO_ROOT = new URL("../..", import.meta.url).pathname;

/** Where compiled-setup.ts puts the compiled sources for this run's gateway processes. */
export const COMPILED_DIR = join(REPO_ROOT, "node_modules/.cache/toolgate-test-build");

/**
 * The gateway's entry point for `spawnGateway`: the compiled build when vitest's setup made one
 * for this run (it names it here, and the test workers inherit it), else `src/main.ts` under tsx,
 * as for a script run on its own (test/sdk/serve-gateway.ts, bench/soak.ts), which must never
 * pick up a build older than the sources.
 */
export const ENTRY_VARIABLE = "TOOLGATE_TEST_GATEWAY_ENTRY";
export const gatewayEntry = (): string => process.env[ENTRY_VARIABLE] ?? "src/main.ts";
