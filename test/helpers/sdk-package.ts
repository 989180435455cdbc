import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";

/**
 * The TypeScript library as a user gets it: `npm pack` of sdk/typescript (its prepack builds it
 * with tsc), installed with `npm install <tarball>` into a fresh project in a temporary
 * directory — its dependencies come from the registry, not from this repository.
 */
const run = promisify(execFile);
const SDK_DIR = fileURLToPath(new URL("../../sdk/typescript", import.meta.url));
const TSX_LOADER = pathToFileURL(
  fileURLToPath(new URL("../../node_modules/tsx/dist/loader.mjs", import.meta.url)),
).href;
const TSC = fileURLToPath(new URL("../../node_modules/typescript/bin/tsc", import.meta.url));
const TYPE_ROOTS = fileURLToPath(new URL("../../node_modules/@types", import.meta.url));

export interface InstalledProject {
  dir: string;
  tarball: string;
  /** Runs `code` as an ES module inside the project; returns its stdout parsed as JSON. */
  script(code: string, env?: Record<string, string>): Promise<any>;
  /** Runs a TypeScript file (tsx) inside the project, e.g. one of examples/. */
  runTs(
    file: string,
    env?: Record<string, string>,
    args?: string[],
  ): Promise<{ stdout: string; stderr: string }>;
  /**
   * A user's TypeScript `code` (written to `name` in the project) checked by tsc against the
   * installed library's types, with the strictest flags a user may set (`--strict`,
   * `--exactOptionalPropertyTypes`, `--noUncheckedIndexedAccess`): tsc's output, empty when it compiles.
   */
  typecheck(name: string, code: string): Promise<string>;
  /** As `typecheck`, for several files (name → code) checked together in one tsc run. */
  typecheckFiles(files: Record<string, string>): Promise<string>;
  remove(): Promise<void>;
}

/** `npm pack` of sdk/typescript into `dir`, installed there into a new project; answers the tarball's path. */
async function packAndInstall(dir: string): Promise<string> {
  const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", dir], {
    cwd: SDK_DIR,
    maxBuffer: 16 << 20,
  });
  const tarball = join(
    dir,
    (JSON.parse(stdout.slice(stdout.indexOf("["))) as { filename: string }[])[0]!.filename,
  );
  await writeFile(
    join(dir, "package.json"),
    JSON.stringify({ name: "toolgate-user", private: true, type: "module" }),
  );
  await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", tarball], {
    cwd: dir,
    maxBuffer: 16 << 20,
  });
  return tarball;
}

/**
 * The library packed and installed once per test run (sdk-package-setup.ts names the directory
 * every test worker shares): the first worker to take the lock (an atomic mkdir) packs and
 * installs into `template/`, the others wait for its `.done` (or `.failed`). Seven files used to
 * pack (tsc) and install (~15 s) each.
 */
async function sharedInstall(shared: string): Promise<string> {
  const template = join(shared, "template");
  const done = join(shared, ".done");
  const failed = join(shared, ".failed");
  const taken = await mkdir(join(shared, "lock")).then(
    () => true,
    () => false,
  );
  if (taken) {
    try {
      await mkdir(template);
      await writeFile(done, await packAndInstall(template));
    } catch (err) {
      await writeFile(failed, String((err as Error).message));
      throw err;
    }
  }
  for (const deadline = Date.now() + 300_000; Date.now() < deadline; ) {
    const tarball = await readFile(done, "utf8").catch(() => null);
    if (tarball) return tarball;
    const failure = await readFile(failed, "utf8").catch(() => null);
    if (failure !== null) throw new Error(`packing the library failed: ${failure}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error("the library was not packed and installed within 300 s");
}

export async function installPackedSdk(): Promise<InstalledProject> {
  const dir = await mkdtemp(join(tmpdir(), "toolgate-sdk-user-"));
  const shared = process.env.TOOLGATE_TEST_SDK_DIR;
  let tarball: string;
  if (shared) {
    // A fresh copy of the installed project, its own for this file (symlinks such as
    // node_modules/.bin/toolgate kept as they are).
    const packed = await sharedInstall(shared);
    await cp(join(shared, "template"), dir, { recursive: true, verbatimSymlinks: true });
    tarball = join(dir, basename(packed));
  } else {
    tarball = await packAndInstall(dir);
  }
  const baseEnv = {
    PATH: process.env.PATH ?? "",
    HOME: dir,
    ...(process.env.NODE_EXTRA_CA_CERTS
      ? { NODE_EXTRA_CA_CERTS: process.env.NODE_EXTRA_CA_CERTS }
      : {}),
  };
  async function typecheckFiles(files: Record<string, string>): Promise<string> {
    const paths = await Promise.all(
      Object.entries(files).map(async ([name, code]) => {
        await writeFile(join(dir, name), code);
        return join(dir, name);
      }),
    );
    // The flags a careful user turns on: the library's declarations must hold under them too
    // (an option typed `?: T` refuses an explicit `undefined` under exactOptionalPropertyTypes).
    const options = [
      "--noEmit",
      "--strict",
      "--exactOptionalPropertyTypes",
      "--noUncheckedIndexedAccess",
      "--skipLibCheck",
      "--module",
      "nodenext",
    ];
    const resolution = ["--moduleResolution", "nodenext", "--target", "es2022"];
    const types = ["--types", "node", "--typeRoots", TYPE_ROOTS];
    const result = await run(
      process.execPath,
      [TSC, ...options, ...resolution, ...types, ...paths],
      {
        cwd: dir,
      },
    ).catch((e: { stdout: string }) => ({ stdout: e.stdout }));
    return result.stdout;
  }
  let scripts = 0;
  return {
    dir,
    tarball,
    async script(code, env = {}) {
      const file = join(dir, `script-${++scripts}.mjs`);
      await writeFile(file, code);
      const { stdout } = await run(process.execPath, [file], {
        cwd: dir,
        env: { ...baseEnv, ...env },
      }).catch((e: { stderr?: string; message: string }) => {
        throw new Error(`script failed: ${e.stderr ?? e.message}`);
      });
      return JSON.parse(stdout);
    },
    async runTs(file, env = {}, args = []) {
      return run(process.execPath, ["--import", TSX_LOADER, file, ...args], {
        cwd: dir,
        env: { ...baseEnv, ...env },
      });
    },
    typecheck: (name, code) => typecheckFiles({ [name]: code }),
    typecheckFiles,
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
