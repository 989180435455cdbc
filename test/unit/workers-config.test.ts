import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/config.js";
import { loadWorkerConfig } from "../../src/workers/config.js";

/** The problems loadWorkerConfig refuses `env` with; [] when it accepts it. */
const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadWorkerConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

/** Runs the workers' entry point with only `env` (and PATH); resolves with how it ended. */
const startWorkers = (env: Record<string, string>) =>
  new Promise<{ status: number | null; stderr: string; stdout: string }>((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/workers/main.ts"], {
      cwd: new URL("../..", import.meta.url).pathname,
      env: { PATH: process.env.PATH, HOST: "127.0.0.1", PORT: "0", ...env },
      stdio: ["ignore", "pipe", "pipe"],
      timeout: 20_000,
    });
    let stderr = "";
    let stdout = "";
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.on("close", (status) => resolve({ status, stderr, stdout }));
  });

describe("the tool workers' settings", () => {
  it("refuses each bad setting with a ConfigError naming it, never repeating its value", () => {
    const cases: [Record<string, string>, string][] = [
      [{ HEAVY_THREADS: "0" }, "HEAVY_THREADS: Too small: expected number to be >=1"],
      [{ HEAVY_THREADS: "abc" }, "HEAVY_THREADS: must be an integer in decimal digits"],
      [{ WEB_MAX_BYTES: "-5" }, "WEB_MAX_BYTES: Too small: expected number to be >=1024"],
      [{ PORT: "99999" }, "PORT: Too big: expected number to be <=65535"],
      [
        { SEARCH_PROVIDER: "google" },
        'SEARCH_PROVIDER: Invalid option: expected one of "searxng"|"brave"',
      ],
      [
        { LOG_LEVEL: "loud" },
        'LOG_LEVEL: Invalid option: expected one of "fatal"|"error"|"warn"|"info"|"debug"|"trace"|"silent"',
      ],
      // z.url() took any scheme: these passed, and failed every call later.
      [{ AI_BASE_URL: "notaurl" }, "AI_BASE_URL: AI_BASE_URL must be an http:// or https:// URL"],
      [
        { AI_BASE_URL: "notaurl:hunter2secret" },
        "AI_BASE_URL: AI_BASE_URL must be an http:// or https:// URL",
      ],
      [{ SEARXNG_URL: "ftp://x" }, "SEARXNG_URL: SEARXNG_URL must be an http:// or https:// URL"],
      [
        { BRAVE_SEARCH_URL: "file:///etc/passwd" },
        "BRAVE_SEARCH_URL: BRAVE_SEARCH_URL must be an http:// or https:// URL",
      ],
    ];
    for (const [env, problem] of cases)
      expect(problemsOf(env), JSON.stringify(env)).toEqual([problem]);
    // Every problem at once, one a setting.
    expect(problemsOf({ HEAVY_THREADS: "0", SEARXNG_URL: "ftp://x" })).toHaveLength(2);
    // The http(s) URLs they are meant for still pass, a path and user:password@ included.
    expect(
      loadWorkerConfig({
        AI_BASE_URL: "https://user:pw@llm.example.com/v1/",
        AI_MODEL: "m",
        SEARXNG_URL: "http://searxng:8080/",
        LOG_LEVEL: "silent",
      }),
    ).toMatchObject({
      logLevel: "silent",
      ai: { baseUrl: "https://user:pw@llm.example.com/v1" },
      search: { provider: "searxng", url: "http://searxng:8080/" },
    });
  });

  it("refuses WEB_ALLOW_PRIVATE_TARGETS=1 in production, as the gateway refuses its own", () => {
    expect(problemsOf({ NODE_ENV: "production", WEB_ALLOW_PRIVATE_TARGETS: "1" })).toEqual([
      "WEB_ALLOW_PRIVATE_TARGETS=1 is refused when NODE_ENV=production",
    ]);
    // A NODE_ENV misspelt is refused, not read as "not production".
    expect(problemsOf({ NODE_ENV: "Production", WEB_ALLOW_PRIVATE_TARGETS: "1" })).toEqual([
      'NODE_ENV: Invalid option: expected one of "development"|"production"|"test"',
    ]);
    for (const env of ["development", "test"])
      expect(
        loadWorkerConfig({ NODE_ENV: env, WEB_ALLOW_PRIVATE_TARGETS: "1" }).web.allowPrivate,
      ).toBe(true);
    expect(loadWorkerConfig({ NODE_ENV: "production" }).web.allowPrivate).toBe(false);
  });

  it("stops the workers' process with the problems, one line each, and exit 78: no stack", async () => {
    const run = await startWorkers({
      NODE_ENV: "production",
      HEAVY_THREADS: "0",
      AI_BASE_URL: "notaurl:hunter2secret",
    });
    expect([run.status, run.stderr, run.stdout]).toEqual([
      78,
      "Invalid configuration:\n" +
        "  - AI_BASE_URL: AI_BASE_URL must be an http:// or https:// URL\n" +
        "  - HEAVY_THREADS: Too small: expected number to be >=1\n",
      "",
    ]);
  }, 30_000);

  it("stops the workers' process in production with WEB_ALLOW_PRIVATE_TARGETS=1: exit 78", async () => {
    const run = await startWorkers({ NODE_ENV: "production", WEB_ALLOW_PRIVATE_TARGETS: "1" });
    expect([run.status, run.stderr, run.stdout]).toEqual([
      78,
      "Invalid configuration:\n  - WEB_ALLOW_PRIVATE_TARGETS=1 is refused when NODE_ENV=production\n",
      "",
    ]);
  }, 30_000);
});
