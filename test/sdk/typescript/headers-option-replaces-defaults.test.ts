import { afterEach, describe, expect, it } from "vitest";
import { Toolgate, ToolgateError } from "../../../sdk/typescript/src/index.js";
import { scriptedServer } from "./scripted-server.js";

/**
 * The `headers` option replaces a default header whatever case its name is written in (the
 * README: "`headers` can replace it"), as in Python (sdk/python/tests/test_client_checks.py):
 * one User-Agent and one Accept are sent, the caller's. A header HTTP cannot carry is refused
 * when the client is made, naming the header but not its value.
 */
let server: Awaited<ReturnType<typeof scriptedServer>> | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("the headers option", () => {
  it.each(["User-Agent", "user-agent", "USER-AGENT"])(
    "%s replaces the default User-Agent rather than adding to it",
    async (name) => {
      server = await scriptedServer(() => ({ status: 200, body: { data: [] } }));
      const client = new Toolgate({
        apiKey: "tg_test_key",
        baseUrl: server.url,
        headers: { [name]: "my-agent/1.0", Accept: "application/json" },
      });
      await client.keys.list();
      const sent = server.received[0]!.rawHeaders;
      expect(sent.filter(([n]) => n.toLowerCase() === "user-agent").map(([, v]) => v)).toEqual([
        "my-agent/1.0",
      ]);
      expect(sent.filter(([n]) => n.toLowerCase() === "accept").map(([, v]) => v)).toEqual([
        "application/json",
      ]);
    },
  );

  it.each([
    ["a line break in a value", { "X-Trace": "a\nb" }],
    ["a non-ASCII value", { "X-Trace": "café" }],
    ["a name with a space", { "X Trace": "a" }],
  ])("holding %s is refused when the client is made", (_, headers) => {
    let error: unknown;
    try {
      new Toolgate({ apiKey: "tg_test_key", baseUrl: "http://127.0.0.1:9", headers });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ToolgateError);
    expect(error).toMatchObject({ status: 0, code: "invalid_argument", param: "headers" });
  });
});
