/**
 * The Python library as a user gets it: its wheel is built (`uv build`, which runs the package's
 * own build backend in an isolated environment), installed with its dependencies from PyPI into
 * a fresh venv under the OS temp directory, and
 * its pytest suite (sdk/python/tests) runs from that venv against the installed package — the
 * suite refuses to run against the source tree — and against a real gateway process and anvil
 * chain (test/sdk/serve-gateway.ts, spawned by the suite's conftest).
 *
 * The pytest test names are read from the test files here, so each becomes one vitest test that
 * reports its own outcome from pytest's JUnit XML report; one more test asserts pytest's exit
 * status and prints its summary when it failed.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { mkdtempSync, readFileSync, readdirSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

const REPO = new URL("../..", import.meta.url).pathname;
const PACKAGE = join(REPO, "sdk/python");
const TESTS = join(PACKAGE, "tests");
const PYTHON = process.env.PYTHON ?? "python3";
/** What the suite needs besides the library: pytest and the agent frameworks' own packages. */
const TEST_REQUIREMENTS = [
  "pytest>=8",
  "pytest-asyncio>=0.24",
  "jsonschema>=4",
  "openai>=1.60",
  "anthropic>=0.40",
  "mypy>=1.10",
];

interface Run {
  code: number | null;
  output: string;
}

function run(
  command: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string | undefined> } = {},
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries({ ...process.env, ...options.env }))
      if (value !== undefined) env[name] = value;
    const child = spawn(command, args, {
      cwd: options.cwd ?? REPO,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.once("error", reject);
    child.once("exit", (code) => resolve({ code, output }));
  });
}

async function mustRun(
  what: string,
  command: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string | undefined> } = {},
): Promise<void> {
  const done = await run(command, args, options);
  if (done.code !== 0)
    throw new Error(`${what} failed (exit ${done.code}):\n${done.output.slice(-4000)}`);
}

/** `test_file.py::test_name` for every test function in the suite, read from the sources. */
function pytestIds(): string[] {
  const ids: string[] = [];
  for (const file of readdirSync(TESTS)
    .filter((f) => /^test_.*\.py$/.test(f))
    .sort()) {
    for (const match of readFileSync(join(TESTS, file), "utf8").matchAll(
      /^(?:async )?def (test_\w+)\(/gm,
    ))
      ids.push(`${file}::${match[1]}`);
  }
  return ids;
}

type Outcome = { state: "passed" | "failed" | "skipped"; detail: string };

/** Outcomes by `test_file.py::test_name`, from pytest's JUnit XML (a parametrized test's cases as one). */
function parseJunit(xml: string): Map<string, Outcome> {
  const outcomes = new Map<string, Outcome>();
  const unescapeXml = (s: string) =>
    s
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .replace(/&quot;/g, '"')
      .replace(/&apos;/g, "'")
      .replace(/&#10;/g, "\n")
      .replace(/&amp;/g, "&");
  for (const match of xml.matchAll(/<testcase ([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const attrs = Object.fromEntries(
      [...match[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], unescapeXml(m[2]!)]),
    );
    const module = String(attrs.classname).split(".").pop();
    const body = match[3] ?? "";
    const failure =
      /<(failure|error)[^>]*?(?:message="([^"]*)")?[^>]*>([\s\S]*?)<\/\1>|<(failure|error)[^>]*\/>/.exec(
        body,
      );
    const state = failure ? "failed" : /<skipped/.test(body) ? "skipped" : "passed";
    // A parametrized test's cases (`test_x[reset]`, `test_x[close]`) are one test here: failed
    // when any case failed, passed when any passed and none failed.
    const name = String(attrs.name);
    const param = /\[(.*)\]$/.exec(name);
    const id = `${module}.py::${param ? name.slice(0, param.index) : name}`;
    const detail = failure
      ? `${param ? `[${param[1]}] ` : ""}${unescapeXml(`${failure[2] ?? ""}\n${failure[3] ?? ""}`)}`
      : "";
    const before = outcomes.get(id);
    outcomes.set(id, {
      state:
        state === "failed" || before?.state === "failed"
          ? "failed"
          : state === "passed" || before?.state === "passed"
            ? "passed"
            : "skipped",
      detail: [before?.detail, detail].filter(Boolean).join("\n"),
    });
  }
  return outcomes;
}

/** test/sdk/serve-gateway.ts, started while the wheel is built; resolves with its JSON line. */
function serveGateway(): { child: ChildProcess; line: Promise<string> } {
  const child = spawn(process.execPath, ["--import", "tsx", "test/sdk/serve-gateway.ts"], {
    cwd: REPO,
    stdio: ["pipe", "pipe", "inherit"],
  });
  const line = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once("line", resolve);
    child.once("exit", (code) =>
      reject(new Error(`serve-gateway.ts exited with ${code} before printing its address`)),
    );
  });
  line.catch(() => undefined);
  return { child, line };
}

const ids = pytestIds();
let served: ReturnType<typeof serveGateway> | undefined;
let workDir = "";
let pytest: Run | undefined;
let outcomes = new Map<string, Outcome>();
let setupError: Error | undefined;
let distributions: { wheel: string; sdist: string } | undefined;

/** The files of a wheel (zip) and an sdist (tar.gz) named `LICENSE` at any depth, with their text. */
const LICENSES_IN = `
import json, sys, tarfile, zipfile
wheel = zipfile.ZipFile(sys.argv[1])
sdist = tarfile.open(sys.argv[2])
print(json.dumps({
  "wheel": {n: wheel.read(n).decode() for n in wheel.namelist() if n.split("/")[-1] == "LICENSE"},
  "sdist": {m.name: sdist.extractfile(m).read().decode() for m in sdist.getmembers() if m.isfile() and m.name.split("/")[-1] == "LICENSE"},
}))
`;

describe("Python library (sdk/python), installed from its wheel into a fresh venv", () => {
  beforeAll(async () => {
    workDir = mkdtempSync(join(tmpdir(), "toolgate-py-"));
    const started = Date.now();
    served = serveGateway();
    try {
      const testVenv = join(workDir, "venv");
      const testPython = join(testVenv, "bin/python");
      const dist = join(workDir, "dist");
      // uv (from PyPI, into a venv of its own) does what pip and build do, in seconds rather than
      // a minute: resolving and unpacking the agent frameworks' packages was most of this suite.
      const toolsVenv = join(workDir, "uv-venv");
      await mustRun("python3 -m venv (uv)", PYTHON, ["-m", "venv", toolsVenv]);
      await mustRun("pip install uv", join(toolsVenv, "bin/python"), [
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "uv",
      ]);
      const uv = join(toolsVenv, "bin/uv");
      // The machine's Python, never one uv would download; no colours or spinners in the output kept.
      const uvEnv = { env: { UV_PYTHON_DOWNLOADS: "never", UV_PYTHON: PYTHON, NO_COLOR: "1" } };
      const [wheel] = await Promise.all([
        (async () => {
          // The sdist, and the wheel built from it, as a registry would get them.
          await mustRun("uv build", uv, ["build", "--quiet", "--out-dir", dist, PACKAGE], uvEnv);
          const built = readdirSync(dist).find((f) => f.endsWith(".whl"));
          const sdist = readdirSync(dist).find((f) => f.endsWith(".tar.gz"));
          if (!built || !sdist) throw new Error(`no wheel or sdist in ${dist}`);
          distributions = { wheel: join(dist, built), sdist: join(dist, sdist) };
          return distributions.wheel;
        })(),
        (async () => {
          await mustRun("uv venv (tests)", uv, ["venv", "--quiet", testVenv], uvEnv);
          await mustRun(
            "uv pip install the test requirements",
            uv,
            ["pip", "install", "--quiet", "--python", testPython, ...TEST_REQUIREMENTS],
            uvEnv,
          );
        })(),
      ]);
      await mustRun(
        "uv pip install the wheel",
        uv,
        [
          "pip",
          "install",
          "--quiet",
          "--python",
          testPython,
          `toolgate[langchain] @ file://${wheel}`,
        ],
        uvEnv,
      );
      const installed = Date.now();
      const junit = join(workDir, "junit.xml");
      pytest = await run(
        testPython,
        ["-m", "pytest", TESTS, "-p", "no:cacheprovider", "-q", "-rfE", `--junitxml=${junit}`],
        {
          cwd: PACKAGE,
          // Nothing from the developer's shell may point the tests at another gateway or the sources.
          // If the early gateway failed to start (a loaded machine), the suite's conftest starts its own.
          env: {
            TOOLGATE_TEST_GATEWAY: await served.line.catch(() => undefined),
            TOOLGATE_API_KEY: undefined,
            TOOLGATE_BASE_URL: undefined,
            PYTHONPATH: undefined,
            TOOLGATE_TEST_SOURCE: undefined,
            TOOLGATE_REPO_ROOT: REPO,
          },
        },
      );
      if (existsSync(junit)) outcomes = parseJunit(readFileSync(junit, "utf8"));
      process.stdout.write(
        `python suite: wheel built and installed in ${((installed - started) / 1000).toFixed(0)} s, pytest ran in ${((Date.now() - installed) / 1000).toFixed(0)} s\n`,
      );
    } catch (error) {
      setupError = error as Error;
    }
  }, 900_000);

  afterAll(async () => {
    if (served && served.child.exitCode === null) {
      const exited = new Promise((resolve) => served!.child.once("exit", resolve));
      served.child.stdin!.end(); // it stops the gateway and the chain when its stdin closes
      await exited;
    }
    if (workDir) rmSync(workDir, { recursive: true, force: true });
  }, 60_000);

  test("the wheel and the sdist ship the repository's MIT LICENSE", async () => {
    if (setupError) throw setupError;
    const listed = await run(PYTHON, [
      "-c",
      LICENSES_IN,
      distributions!.wheel,
      distributions!.sdist,
    ]);
    expect(listed.code, listed.output).toBe(0);
    const license = readFileSync(join(REPO, "LICENSE"), "utf8");
    expect(license).toMatch(/^MIT License\n\nCopyright \(c\) 2026 Toolgate contributors\n/);
    expect(JSON.parse(listed.output)).toEqual({
      wheel: { "toolgate-0.1.0.dist-info/licenses/LICENSE": license },
      sdist: { "toolgate-0.1.0/LICENSE": license },
    });
  });

  test("pytest passes as a whole", () => {
    if (setupError) throw setupError;
    const summary = pytest!.output.split("\n").slice(-60).join("\n");
    expect(pytest!.code, `pytest failed:\n${summary}`).toBe(0);
  });

  for (const id of ids) {
    test(id, () => {
      if (setupError) throw setupError;
      const outcome = outcomes.get(id);
      expect(outcome, `${id} did not run:\n${pytest?.output.slice(-3000)}`).toBeDefined();
      expect(outcome!.state, `${id}:\n${outcome!.detail}`).toBe("passed");
    });
  }
});
