/**
 * `npm run build:cli`: the `toolgate` CLI as five single-file binaries in dist/cli/, with
 * `bun build --compile`, cross-compiled from this machine. Each target's Bun runtime comes from
 * the npm registry's `@oven/bun-<target>` package, of the same version as the `bun` dev
 * dependency, fetched with `npm pack` (npm's own cache) and unpacked into
 * node_modules/.cache/toolgate-bun/ — so nothing is downloaded from anywhere but the registry,
 * and a second build is offline.
 */
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const ENTRY = join(ROOT, "sdk/typescript/src/cli/bin.ts");
const OUT = join(ROOT, "dist/cli");
const CACHE = join(ROOT, "node_modules/.cache/toolgate-bun");

/** Output name → Bun's --target and the npm package with that target's runtime. */
export const TARGETS = [
  { out: "toolgate-linux-x64", target: "bun-linux-x64", pkg: "@oven/bun-linux-x64", exe: "bun" },
  {
    out: "toolgate-linux-arm64",
    target: "bun-linux-arm64",
    pkg: "@oven/bun-linux-aarch64",
    exe: "bun",
  },
  {
    out: "toolgate-darwin-arm64",
    target: "bun-darwin-arm64",
    pkg: "@oven/bun-darwin-aarch64",
    exe: "bun",
  },
  { out: "toolgate-darwin-x64", target: "bun-darwin-x64", pkg: "@oven/bun-darwin-x64", exe: "bun" },
  {
    out: "toolgate-windows-x64.exe",
    target: "bun-windows-x64",
    pkg: "@oven/bun-windows-x64",
    exe: "bun.exe",
  },
] as const;

const bunVersion = (
  JSON.parse(readFileSync(join(ROOT, "node_modules/bun/package.json"), "utf8")) as {
    version: string;
  }
).version;

/**
 * The runtime binary of one target, from the cache or unpacked from its npm package. Unpacked
 * beside its place and renamed into it, whole and executable: two builds at once (test files run
 * in parallel) must never find, and run, a binary the other is still writing.
 */
function runtime(pkg: string, exe: string): string {
  const dir = join(CACHE, bunVersion, pkg.replace("/", "+"));
  const path = join(dir, "package/bin", exe);
  if (existsSync(path)) return path;
  mkdirSync(dirname(path), { recursive: true });
  const tmp = mkdtempSync(join(dir, ".unpacking-"));
  try {
    const [packed] = JSON.parse(
      execFileSync("npm", ["pack", `${pkg}@${bunVersion}`, "--json", "--pack-destination", tmp], {
        cwd: tmp,
        encoding: "utf8",
        stdio: ["ignore", "pipe", "inherit"],
      }),
    ) as { filename: string }[];
    execFileSync("tar", ["-xzf", join(tmp, packed!.filename), "-C", tmp, `package/bin/${exe}`]);
    const unpacked = join(tmp, "package/bin", exe);
    chmodSync(unpacked, 0o755);
    renameSync(unpacked, path);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return path;
}

/** The Bun that runs the build: the dev dependency's, when its install step placed it, else the Linux x64 runtime. */
export function hostBun(): string {
  const installed = join(ROOT, "node_modules/bun/bin/bun.exe");
  if (existsSync(installed) && statSync(installed).size > 1_000_000) return installed;
  if (process.platform !== "linux" || process.arch !== "x64")
    throw new Error(
      "build:cli runs on Linux x64 (or with the bun package installed with its install script)",
    );
  return runtime("@oven/bun-linux-x64", "bun");
}

export function buildCli(only?: string[]): string[] {
  mkdirSync(OUT, { recursive: true });
  const bun = hostBun();
  const built: string[] = [];
  for (const t of TARGETS.filter((t) => !only || only.includes(t.out))) {
    const outfile = join(OUT, t.out);
    execFileSync(
      bun,
      [
        "build",
        ENTRY,
        "--compile",
        "--minify",
        `--target=${t.target}`,
        `--compile-executable-path=${runtime(t.pkg, t.exe)}`,
        `--outfile=${outfile}`,
      ],
      {
        cwd: ROOT,
        stdio: ["ignore", "ignore", "inherit"],
      },
    );
    built.push(outfile);
  }
  return built;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = Date.now();
  for (const file of buildCli(process.argv.slice(2).length ? process.argv.slice(2) : undefined))
    console.log(`${file} (${(statSync(file).size / 1e6).toFixed(1)} MB)`);
  console.log(
    `built in ${((Date.now() - started) / 1000).toFixed(1)} s (bun ${bunVersion}; runtimes cached in ${dirname(join(CACHE, "x"))})`,
  );
}
