import { execFileSync, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rm, stat } from "node:fs/promises";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hostBun } from "../../../scripts/build-cli.js";
import { ACCOUNT } from "./scripted-server.js";

/**
 * The compiled `toolgate` (bin.ts under `bun build --compile`, as `npm run build:cli` makes it,
 * for this machine, into a directory of its own) against a stub gateway: how it ends when its
 * standard output or error cannot be written, and what it does with bytes the shell gives it.
 */
let dir: string;
let binary: string;
let server: Server;
let base: string;

const json = (res: ServerResponse, status: number, body: unknown, headers = {}) =>
  res
    .writeHead(status, { "content-type": "application/json", ...headers })
    .end(JSON.stringify(body));

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "toolgate-bin-io-"));
  binary = join(dir, "toolgate");
  execFileSync(hostBun(), [
    "build",
    new URL("../../../sdk/typescript/src/cli/bin.ts", import.meta.url).pathname,
    "--compile",
    "--minify",
    `--outfile=${binary}`,
  ]);
  server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      if (req.url === "/api/v1/account") return json(res, 200, ACCOUNT);
      if (req.url === "/v1/tools/hash" && req.method === "POST")
        return json(
          res,
          200,
          { digest: "d" },
          { "x-credits-charged": "1", "x-credits-remaining": "9" },
        );
      json(res, 418, { error: { code: "teapot", message: "no" } });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 120_000);
afterAll(async () => {
  server?.close();
  await rm(dir, { recursive: true, force: true });
});

const env = () => ({
  PATH: process.env.PATH ?? "",
  TOOLGATE_CONFIG_DIR: join(dir, "config"),
  TOOLGATE_API_KEY: "tg_live_test",
  TOOLGATE_BASE_URL: base,
});

/** Runs the binary with `stdio` as given ("closed": a pipe closed before anything is written to it). */
function runWith(
  argv: string[],
  out: "pipe" | "closed" | number,
  err: "pipe" | "closed",
  input?: string,
  extraEnv: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(binary, argv, {
    env: { ...env(), ...extraEnv },
    stdio: ["pipe", typeof out === "number" ? out : "pipe", "pipe"],
  });
  child.stdin!.end(input ?? "");
  let stdout = "";
  let stderr = "";
  if (out === "closed") child.stdout!.destroy();
  else child.stdout?.on("data", (c) => (stdout += c));
  if (err === "closed") child.stderr!.destroy();
  else child.stderr!.on("data", (c) => (stderr += c));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

describe("standard error closed early (toolgate call … 2>&1 | head -1)", () => {
  it("keeps the command's own exit code: 0 for a call done and charged, 3 or 4 for a failure", async () => {
    const done = await runWith(["call", "hash", "--input", '{"text":"hi"}'], "pipe", "closed");
    expect([done.code, JSON.parse(done.stdout)]).toEqual([0, { digest: "d" }]);
    expect((await runWith(["tools", "show", "nope"], "pipe", "closed")).code).toBe(3);
    expect(
      (
        await runWith(["account"], "pipe", "closed", "", {
          TOOLGATE_BASE_URL: "http://127.0.0.1:9",
        })
      ).code,
    ).toBe(4);
  });
});

describe("standard output that cannot be written (a full disk)", () => {
  it("is one line on standard error, no stack, and exit 5", async () => {
    const full = openSync("/dev/full", "w");
    try {
      const call = await runWith(["call", "hash", "--input", '{"text":"hi"}'], full, "pipe");
      // The write fails after the cost line may already be out: either order.
      expect([call.code, call.stderr.split("\n").sort()]).toEqual([
        5,
        ["", "(1 credit(s), 9 left)", "toolgate: could not write output: ENOSPC"],
      ]);
      const listed = await runWith(["account", "--json"], full, "pipe");
      expect([listed.code, JSON.parse(listed.stderr)]).toEqual([
        5,
        {
          error: {
            status: 0,
            code: "output_error",
            message: "could not write output: ENOSPC",
          },
        },
      ]);
    } finally {
      closeSync(full);
    }
  });
});

describe("bytes from the shell", () => {
  it("an argument that is not UTF-8 is refused, not sent as U+FFFD", async () => {
    const run = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn("sh", ["-c", `"$0" call hash --text "$(printf 'caf\\351')"`, binary], {
        env: env(),
      });
      let stderr = "";
      child.stderr.on("data", (c) => (stderr += c));
      child.on("close", (code) => resolve({ code, stderr }));
    });
    expect([run.code, run.stderr]).toEqual([
      2,
      expect.stringContaining("holds U+FFFD (\uFFFD): it was probably not UTF-8 text"),
    ]);
  });
});

describe("login", () => {
  it("tightens a config directory open to other users to 0700, and says so", async () => {
    const config = join(dir, "open-config");
    await mkdir(config);
    await chmod(config, 0o755);
    const login = await runWith(["login", "--base-url", base], "pipe", "pipe", "tg_live_test\n", {
      TOOLGATE_CONFIG_DIR: config,
      TOOLGATE_API_KEY: "",
    });
    expect([login.code, login.stderr]).toEqual([
      0,
      `toolgate: ${config} was open to other users; its permissions are now 0700 (yours alone)\n`,
    ]);
    expect((await stat(config)).mode & 0o777).toBe(0o700);
  });
});
