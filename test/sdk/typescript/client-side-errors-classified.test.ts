import { afterEach, describe, expect, it } from "vitest";
import { run } from "../../../sdk/typescript/src/cli/main.js";
import { Toolgate, ToolgateError } from "../../../sdk/typescript/src/index.js";
import { ACCOUNT, scriptedServer } from "./scripted-server.js";

/**
 * A mistake in what the caller gives is `invalid_argument` before any request, never a network
 * error that is retried and says the request "may have been received and run": a timeout no
 * timer can keep (Infinity, 0, negative, above setTimeout's 2^31 - 1 ms, which Node turns into
 * 1 ms), and in the CLI an id or tool name that names another path (`call ..`), exit 2 as every
 * usage error. The Python library: sdk/python/tests/test_client_checks.py.
 */
let server: Awaited<ReturnType<typeof scriptedServer>> | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a timeout no timer can keep", () => {
  it.each([Number.POSITIVE_INFINITY, Number.NaN, 0, -1, 3_000_000_000])(
    "timeoutMs %s is refused when the client is made",
    (timeoutMs) => {
      let error: unknown;
      try {
        new Toolgate({ apiKey: "tg_test_key", baseUrl: "http://127.0.0.1:9", timeoutMs });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ToolgateError);
      expect(error).toMatchObject({ status: 0, code: "invalid_argument", param: "timeoutMs" });
    },
  );

  it.each([Number.POSITIVE_INFINITY, 3_000_000_000])(
    "a call's own timeoutMs %s is refused before any request",
    async (timeoutMs) => {
      server = await scriptedServer(() => ({ status: 200, body: { digest: "abc" } }));
      const client = new Toolgate({ apiKey: "tg_test_key", baseUrl: server.url });
      const error = await client.tools
        .call("hash", { text: "x" }, { timeoutMs })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ status: 0, code: "invalid_argument", param: "timeoutMs" });
      expect(server.received).toHaveLength(0);
    },
  );

  it("the largest one a timer keeps (2^31 - 1 ms) is taken and the call answered", async () => {
    server = await scriptedServer(() => ({ status: 200, body: { digest: "abc" } }));
    const client = new Toolgate({
      apiKey: "tg_test_key",
      baseUrl: server.url,
      timeoutMs: 2_147_483_647,
    });
    expect(await client.tools.call("hash", { text: "x" })).toEqual({ digest: "abc" });
  });
});

describe("the CLI", () => {
  it.each([
    [["call", ".."]],
    [["call", ".", "--input", "{}"]],
    [["tools", "show", "."]],
    [["keys", "revoke", ".."]],
  ])("%j is a usage error, exit 2, with no request sent", async (argv) => {
    server = await scriptedServer(() => ({ status: 200, body: {} }));
    process.env.TOOLGATE_API_KEY = "tg_test_key";
    try {
      const code = await run([...argv, "--base-url", server.url], {
        out: () => undefined,
        err: () => undefined,
      });
      expect(code).toBe(2);
    } finally {
      delete process.env.TOOLGATE_API_KEY;
    }
    expect(server.received).toHaveLength(0);
  });

  it("an API key that cannot be a header is a usage error, exit 2, not printed", async () => {
    const key = "tg_live_abc\u200bdef0123456789";
    const err: string[] = [];
    process.env.TOOLGATE_API_KEY = key;
    try {
      const code = await run(["account", "--base-url", "http://127.0.0.1:9"], {
        out: () => undefined,
        err: (t) => err.push(t),
      });
      expect(code).toBe(2);
    } finally {
      delete process.env.TOOLGATE_API_KEY;
    }
    expect(err.join("\n")).not.toContain("def0123456789");
  });
});

describe("a base URL", () => {
  // An env file's line break, a pasted space: fetch's URL trimmed it when the client checked it,
  // and the client kept the raw string, so every request threw a bare TypeError (Invalid URL).

  it.each(["\n", "\r\n", " ", "\t"])(
    "with white space around it (%j) is trimmed, as around an API key: the request is sent",
    async (space) => {
      server = await scriptedServer(() => ({ status: 200, body: ACCOUNT }));
      const client = new Toolgate({
        apiKey: "tg_test_key",
        baseUrl: `${space}${server.url}${space}`,
      });
      expect(client.baseUrl).toBe(server.url);
      expect((await client.account.get()).id).toBe("acct_1");
      process.env.TOOLGATE_BASE_URL = `${server.url}${space}`;
      try {
        expect((await new Toolgate({ apiKey: "tg_test_key" }).account.get()).id).toBe("acct_1");
      } finally {
        delete process.env.TOOLGATE_BASE_URL;
      }
      expect(server.received.map((r) => r.url)).toEqual(["/api/v1/account", "/api/v1/account"]);
    },
  );

  it.each([
    ["http://127.0.0.1:9/a b", 21],
    ["http://127.0.0.1:9/a\tb", 21],
    ["http://127.0.0.1:9\n/gw", 19],
    ["http://127.0.0.1:9/\u00a0gw", 20],
  ])(
    "with white space inside it (%j) is refused when the client is made, naming where",
    (baseUrl, position) => {
      let error: unknown;
      try {
        new Toolgate({ apiKey: "tg_test_key", baseUrl });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ToolgateError);
      expect(error).toMatchObject({ status: 0, code: "invalid_argument", param: "baseUrl" });
      expect((error as Error).message).toBe(
        `baseUrl must not hold white space or control characters (got ${JSON.stringify(baseUrl)}, one at position ${position}); write a space in a path as %20.`,
      );
    },
  );

  it.each(["http:127.0.0.1:8402", "http:/127.0.0.1:8402", "http://127.0.0.1:99999"])(
    "%j, which Python's urlsplit or httpx cannot use, is refused as not an http(s) URL, as there",
    (baseUrl) => {
      let error: unknown;
      try {
        new Toolgate({ apiKey: "tg_test_key", baseUrl });
      } catch (e) {
        error = e;
      }
      expect(error).toMatchObject({
        status: 0,
        code: "invalid_argument",
        param: "baseUrl",
        message: `baseUrl must be an http(s) URL such as https://toolgate.example (got ${JSON.stringify(baseUrl)}).`,
      });
    },
  );

  it.each(["/gw?x=1", "/gw#f", "/gw?", "/#"])(
    "with a query or fragment (%j) is refused when the client is made, no request sent, as in Python and the CLI",
    async (path) => {
      // Each request's path was joined onto it, dropping /gw: the API key went to /api/v1/…,
      // outside the gateway at /gw.
      server = await scriptedServer(() => ({ status: 200, body: ACCOUNT }));
      const url = server.url + path;
      const message = `must not hold a query (?…) or fragment (#…) (got ${JSON.stringify(url)}): give the gateway's address alone, such as https://toolgate.example/gw.`;
      const made = async (options: { baseUrl?: string }) => {
        try {
          return await new Toolgate({ apiKey: "tg_test_key", ...options }).account.get();
        } catch (e) {
          return e;
        }
      };
      expect(await made({ baseUrl: url })).toMatchObject({
        status: 0,
        code: "invalid_argument",
        param: "baseUrl",
        message: `baseUrl ${message}`,
      });
      process.env.TOOLGATE_BASE_URL = url;
      try {
        expect(await made({})).toMatchObject({
          code: "invalid_argument",
          param: "TOOLGATE_BASE_URL",
          message: `TOOLGATE_BASE_URL ${message}`,
        });
      } finally {
        delete process.env.TOOLGATE_BASE_URL;
      }
      expect(server.received).toEqual([]);
    },
  );

  it("in the CLI: white space around it, trimmed and the command run; inside it, a usage error (exit 2) with no stack", async () => {
    server = await scriptedServer(() => ({ status: 200, body: ACCOUNT }));
    process.env.TOOLGATE_API_KEY = "tg_test_key";
    const err: string[] = [];
    const io = { out: () => undefined, err: (t: string) => err.push(t) };
    try {
      expect(await run(["account", "--json", "--base-url", `${server.url} `], io)).toBe(0);
      process.env.TOOLGATE_BASE_URL = `${server.url}\n`;
      expect(await run(["account", "--json"], io)).toBe(0);
      expect(err).toEqual([]);
      expect(await run(["account", "--base-url", `${server.url}/a b`], io)).toBe(2);
    } finally {
      delete process.env.TOOLGATE_API_KEY;
      delete process.env.TOOLGATE_BASE_URL;
    }
    expect(err).toEqual([
      `toolgate: --base-url must not hold white space or control characters (got "${server.url}/a b", one at position ${server.url.length + 3}); write a space in a path as %20`,
    ]);
    expect(server.received).toHaveLength(2);
  });
});
