import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { COMPILED_DIR, REPO_ROOT } from "../helpers/compiled.js";
import { freshDatabase } from "../helpers/postgres.js";
import { REDIS_URL, uniquePrefix } from "../helpers/redis.js";

/**
 * `npm run books:check` where the production image runs it: NODE_ENV=production, the compiled
 * build under dist/, and no tsx to be found (a dev dependency, left out by `npm ci --omit=dev`).
 * The launcher is run from a directory laid out as the image is — scripts/books-check.mjs (and the
 * launch.mjs it uses) beside
 * dist/ (this run's compiled sources) — outside the repository, so that nothing there can
 * resolve tsx.
 */
let image: string;
let database: string;
beforeAll(async () => {
  image = mkdtempSync(join(tmpdir(), "toolgate-image-"));
  mkdirSync(join(image, "scripts"));
  for (const file of ["launch.mjs", "books-check.mjs"])
    copyFileSync(join(REPO_ROOT, "scripts", file), join(image, "scripts", file));
  symlinkSync(COMPILED_DIR, join(image, "dist"));
  database = await freshDatabase();
});
afterAll(() => rmSync(image, { recursive: true, force: true }));

/** `npm run books:check` as the image runs it, with production settings and `env` beside. */
const runCheck = (env: Record<string, string | undefined>) =>
  spawnSync(process.execPath, ["scripts/books-check.mjs"], {
    cwd: image,
    env: { PATH: process.env.PATH, NODE_ENV: "production", ...env },
    encoding: "utf8",
  });

it("runs from the compiled build with NODE_ENV=production and no tsx", () => {
  const check = runCheck({
    REDIS_URL,
    REDIS_KEY_PREFIX: uniquePrefix("books-check-compiled"),
    DATABASE_URL: database,
  });
  expect([check.status, check.stdout, check.stderr]).toEqual([
    0,
    "books:check: 0 accounts, 0 ledger entries, 0 mismatches\n" +
      "books:check: 0 events, 0 held more than once\n",
    "books:check: x402 not configured: on-chain payments not checked\n",
  ]);
});

it("says in one line, exiting 3, that the books could not be reached: not a mismatch (1), nothing was checked", () => {
  const check = runCheck({
    REDIS_URL,
    REDIS_KEY_PREFIX: uniquePrefix("books-check-compiled"),
    DATABASE_URL: "postgres://toolgate@127.0.0.1:1/books", // nothing listens on port 1
  });
  expect([check.status, check.stdout, check.stderr]).toEqual([
    3,
    "",
    "books:check: could not reach the books (DATABASE_URL): connect ECONNREFUSED 127.0.0.1:1\n",
  ]);
});

it("says to build first when dist/ is missing, in one line", () => {
  rmSync(join(image, "dist"));
  const check = runCheck({});
  expect([check.status, check.stderr]).toEqual([
    1,
    "NODE_ENV=production runs the compiled build: run `npm run build` first (dist/ is missing).\n",
  ]);
});
