import { afterEach, describe, expect, it } from "vitest";
import { run } from "../../../sdk/typescript/src/cli/main.js";
import { Toolgate, ToolgateError } from "../../../sdk/typescript/src/index.js";
import { CALLED, scriptedServer } from "./scripted-server.js";

/**
 * Every tool call carries an Idempotency-Key, on every attempt: a key the caller gives that the
 * gateway would not take (empty, spaces, not printable ASCII, over 255 characters) is refused
 * before anything is sent, never dropped while the call is still retried, which ran and charged a
 * call twice when its first answer was lost. The Python library refuses the same keys
 * (sdk/python/tests/test_client_checks.py), and so does the CLI's --idempotency-key.
 */
let server: Awaited<ReturnType<typeof scriptedServer>> | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** First attempt: the answer is lost (reset); the retry is answered. */
const lostThenAnswered = () => scriptedServer((_, n) => (n === 0 ? "reset" : CALLED));

describe("an Idempotency-Key the gateway would not take", () => {
  it.each([
    ["empty", ""],
    ["spaces", "   "],
    ["surrounded by spaces", " key-1 "],
    ["not ASCII", "clé"],
    ["too long", "k".repeat(256)],
  ])("(%s) is refused before any request, in the library", async (_, key) => {
    server = await lostThenAnswered();
    const client = new Toolgate({ apiKey: "tg_test_key", baseUrl: server.url });
    const error = await client.tools
      .call("hash", { text: "x" }, { idempotencyKey: key })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolgateError);
    expect(error).toMatchObject({ status: 0, code: "invalid_argument", param: "idempotencyKey" });
    expect(server.received).toHaveLength(0);
  });

  it("a valid key given is sent on the first attempt and on its retry", async () => {
    server = await lostThenAnswered();
    const client = new Toolgate({ apiKey: "tg_test_key", baseUrl: server.url });
    await client.tools.call("hash", { text: "x" }, { idempotencyKey: "my-key-123" });
    expect(server.received.map((r) => r.headers["idempotency-key"])).toEqual([
      "my-key-123",
      "my-key-123",
    ]);
  });

  it("without one, a key is made and kept across the retry", async () => {
    server = await lostThenAnswered();
    const client = new Toolgate({ apiKey: "tg_test_key", baseUrl: server.url });
    await client.tools.call("hash", { text: "x" });
    const keys = server.received.map((r) => r.headers["idempotency-key"]);
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^[\x21-\x7e]{1,255}$/);
    expect(keys[1]).toBe(keys[0]);
  });

  it.each([
    ["--idempotency-key", ""],
    ["--idempotency-key=", undefined],
  ])(
    "the CLI's %s with an empty value is a usage error (exit 2) and sends nothing",
    async (flag, value) => {
      server = await lostThenAnswered();
      const err: string[] = [];
      const argv = ["call", "hash", "--input", '{"text":"x"}', "--base-url", server.url, flag];
      if (value !== undefined) argv.push(value);
      const before = process.env.TOOLGATE_API_KEY;
      process.env.TOOLGATE_API_KEY = "tg_test_key";
      try {
        const code = await run(argv, { out: () => undefined, err: (t) => err.push(t) });
        expect(code).toBe(2);
      } finally {
        if (before === undefined) delete process.env.TOOLGATE_API_KEY;
        else process.env.TOOLGATE_API_KEY = before;
      }
      expect(err.join("\n")).toMatch(/--idempotency-key must be 1 to 255 printable ASCII/);
      expect(server.received).toHaveLength(0);
    },
  );
});
