import { cpSync, readdirSync, rmSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { build } from "esbuild";
import { COMPILED_DIR, ENTRY_VARIABLE, REPO_ROOT } from "./compiled.js";

/**
 * vitest global setup: the sources compiled once for the gateway processes the tests start
 * (`spawnGateway`), laid out as `npm run build` lays out `dist/` (src/, chain-fixtures/,
 * contracts-abi/, the CHANGELOG beside them), under the repository's node_modules so that its
 * packages resolve.
 *
 * A process started with `--import tsx` resolves and loads each of its modules through tsx's
 * hooks: about 1.3 s more CPU per start than the same code compiled, and the suite starts
 * gateway processes by the hundred. esbuild is what tsx compiles with, file by file, so the code
 * that runs is the code tsx would run; it is made afresh for every run (in about a second), so a
 * test never runs yesterday's sources.
 */
export default async function setup(): Promise<void> {
  rmSync(COMPILED_DIR, { recursive: true, force: true });
  const sources = ["src", "chain-fixtures", "contracts-abi"].flatMap((dir) =>
    filesUnder(join(REPO_ROOT, dir)),
  );
  await build({
    entryPoints: sources.filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts")),
    outbase: REPO_ROOT,
    outdir: COMPILED_DIR,
    format: "esm",
    platform: "node",
    target: `node${process.versions.node}`, // the node that runs them: import attributes kept
    sourcemap: "linked",
    logLevel: "error",
  });
  // What the code reads beside itself: dashboard scripts, Lua, SQL migrations, contract builds.
  for (const file of sources.filter((f) => !f.endsWith(".ts")))
    cpSync(file, join(COMPILED_DIR, relative(REPO_ROOT, file)));
  cpSync(join(REPO_ROOT, "CHANGELOG.md"), join(COMPILED_DIR, "CHANGELOG.md"));
  process.env[ENTRY_VARIABLE] = join(COMPILED_DIR, "src/main.js");
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .map((name) => join(dir, name))
    .filter((path) => statSync(path).isFile());
}
