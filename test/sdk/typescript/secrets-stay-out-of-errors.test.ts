import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { run } from "../../../sdk/typescript/src/cli/main.js";
import { Toolgate, ToolgateError } from "../../../sdk/typescript/src/index.js";
import { scriptedServer } from "./scripted-server.js";

/**
 * A secret given to the client never shows in what it raises or prints: an API key read from a
 * file (with its trailing newline) is sent trimmed, one holding a character a header cannot carry
 * is refused when the client is made, naming its position and never the key; a base URL holding
 * user:password@ is refused when the client is made (both libraries and the CLI), without the
 * password; a wallet key file whose key is out of the curve's range is a usage error that prints
 * neither the key nor a stack. The Python library: sdk/python/tests/test_client_checks.py.
 */
const KEY = "tg_live_a2y8kvpgy7pocc56_t86sTMf9h0Z4SJfB5OTOdLBZDAvEaEYC";
const PASSWORD = "pr0xy-S3CRET";

let server: Awaited<ReturnType<typeof scriptedServer>> | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "toolgate-secrets-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const caught = (f: () => unknown): unknown => {
  try {
    f();
  } catch (error) {
    return error;
  }
  return undefined;
};

async function cli(argv: string[], env: Record<string, string | undefined> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  for (const [k, v] of Object.entries(env))
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  try {
    const code = await run(argv, { out: (t) => out.push(t), err: (t) => err.push(t) });
    return { code, out: out.join("\n"), err: err.join("\n") };
  } finally {
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  }
}

describe("an API key", () => {
  it.each([
    ["a trailing newline", `${KEY}\n`],
    ["a trailing CRLF", `${KEY}\r\n`],
    ["surrounding spaces and tabs", ` \t${KEY} `],
  ])("with %s is sent without it", async (_, key) => {
    server = await scriptedServer(() => ({ status: 200, body: { data: [] } }));
    await new Toolgate({ apiKey: key, baseUrl: server.url }).keys.list();
    expect(server.received[0]!.headers["x-api-key"]).toBe(KEY);
  });

  it.each([
    ["a line break inside", `${KEY.slice(0, 10)}\n${KEY.slice(10)}`],
    ["a zero-width space", `${KEY}\u200b`],
    ["a non-ASCII letter", `${KEY}é`],
    ["an inner space", `${KEY.slice(0, 10)} ${KEY.slice(10)}`],
  ])("holding %s is refused when the client is made, without the key", (_, key) => {
    const error = caught(() => new Toolgate({ apiKey: key, baseUrl: "http://127.0.0.1:9" }));
    expect(error).toBeInstanceOf(ToolgateError);
    expect(error).toMatchObject({ status: 0, code: "invalid_argument", param: "apiKey" });
    expect(String((error as Error).message)).not.toContain(KEY.slice(8, 30));
    expect(String((error as Error).message)).toMatch(/not printable ASCII/);
  });

  it("from TOOLGATE_API_KEY with a bad character is refused too, naming the variable", () => {
    const before = process.env.TOOLGATE_API_KEY;
    process.env.TOOLGATE_API_KEY = `${KEY}\u00a0`;
    try {
      const error = caught(() => new Toolgate({ baseUrl: "http://127.0.0.1:9" }));
      expect(error).toMatchObject({ code: "invalid_argument", param: "TOOLGATE_API_KEY" });
      expect((error as Error).message).not.toContain(KEY.slice(8, 30));
    } finally {
      if (before === undefined) delete process.env.TOOLGATE_API_KEY;
      else process.env.TOOLGATE_API_KEY = before;
    }
  });
});

describe("a base URL with user:password@", () => {
  it("is refused when the client is made, without the password", () => {
    const error = caught(
      () => new Toolgate({ apiKey: KEY, baseUrl: `http://proxyuser:${PASSWORD}@127.0.0.1:9/s` }),
    );
    expect(error).toBeInstanceOf(ToolgateError);
    expect(error).toMatchObject({ status: 0, code: "invalid_argument", param: "baseUrl" });
    expect((error as Error).message).not.toContain(PASSWORD);
    expect((error as Error).message).toContain("http://***@127.0.0.1:9/s");
  });

  it("that is not even an http URL is named without its password", () => {
    const error = caught(() => new Toolgate({ apiKey: KEY, baseUrl: `ftp://u:${PASSWORD}@host` }));
    expect(error).toMatchObject({ code: "invalid_argument" });
    expect((error as Error).message).not.toContain(PASSWORD);
  });

  it("is a usage error in the CLI (exit 2), without the password", async () => {
    const done = await cli(["account", "--base-url", `http://u:${PASSWORD}@127.0.0.1:9`], {
      TOOLGATE_API_KEY: KEY,
    });
    expect(done.code).toBe(2);
    expect(done.err).not.toContain(PASSWORD);
    expect(done.err).toMatch(/must not hold a user name or password/);
  });

  it("a redirect's Location with credentials is named without them", async () => {
    server = await scriptedServer(() => ({
      status: 302,
      headers: { location: `http://u:${PASSWORD}@elsewhere.example/x` },
    }));
    const error = await new Toolgate({ apiKey: KEY, baseUrl: server.url }).account
      .get()
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "invalid_response" });
    expect((error as Error).message).not.toContain(PASSWORD);
  });
});

describe("the CLI's wallet key file", () => {
  it.each([
    ["zero", `0x${"0".repeat(64)}\n`],
    ["above the curve order", `0x${"f".repeat(64)}\n`],
  ])(
    "holding a key %s is a one-line usage error (exit 2) that prints no key",
    async (name, key) => {
      const file = join(dir, `${name.replace(/ /g, "-")}.key`);
      await writeFile(file, key, { mode: 0o600 });
      const done = await cli(
        [
          "call",
          "hash",
          "--text",
          "hi",
          "--wallet-key-file",
          file,
          "--base-url",
          "http://127.0.0.1:9",
        ],
        { TOOLGATE_API_KEY: undefined },
      );
      expect(done.code).toBe(2);
      expect(done.err.split("\n")).toHaveLength(1);
      expect(done.err).toContain(file);
      expect(done.err).not.toMatch(
        /ffffffff|115792089237316195423570985008687907853269984665640564039457584007913129639935|0x0{64}|\bat \S+:\d+/,
      );
    },
  );
});
