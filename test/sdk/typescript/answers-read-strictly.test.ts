import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import { run } from "../../../sdk/typescript/src/cli/main.js";
import { retryAfterSeconds } from "../../../sdk/typescript/src/errors.js";
import { Toolgate, ToolgateError } from "../../../sdk/typescript/src/index.js";
import { CALLED, scriptedServer } from "./scripted-server.js";

/**
 * What the library reads from an answer, read as the Python library reads it
 * (sdk/python/tests/test_answers_read_strictly.py): a charged call's receipt that cannot be
 * decoded never costs its output; `Retry-After` is delta-seconds (digits only) or an HTTP-date,
 * anything else as if absent; a paged walk handed back a cursor it has used stops with
 * `invalid_response`; a 2xx answer of the wrong shape is `invalid_response`, in the CLI too.
 */
let server: Awaited<ReturnType<typeof scriptedServer>> | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a charged call's PAYMENT-RESPONSE that cannot be decoded", () => {
  it.each([
    ["not base64", "%%not-base64%%"],
    ["base64 of text that is not JSON", btoa("not json")],
    ["base64 of JSON that is not an object", btoa("[1,2]")],
  ])("(%s) leaves the output, with no receipt", async (_, header) => {
    server = await scriptedServer(() => ({
      ...CALLED,
      headers: { ...CALLED.headers, "payment-response": header },
    }));
    const client = new Toolgate({ apiKey: "tg_test_key", baseUrl: server.url });
    const result = await client.tools.callWithDetails("hash", { text: "x" });
    expect(result.output).toEqual({ digest: "abc" });
    expect(result.payment).toBeUndefined();
    expect(result.creditsCharged).toBe(1);
  });

  it("the CLI prints the output and exits 0", async () => {
    server = await scriptedServer(() => ({
      ...CALLED,
      headers: { ...CALLED.headers, "payment-response": "%%not-base64%%" },
    }));
    const out: string[] = [];
    process.env.TOOLGATE_API_KEY = "tg_test_key";
    try {
      const code = await run(
        ["call", "hash", "--input", '{"text":"x"}', "--base-url", server.url],
        { out: (t) => out.push(t), err: () => undefined },
      );
      expect(code).toBe(0);
    } finally {
      delete process.env.TOOLGATE_API_KEY;
    }
    expect(JSON.parse(out.join("\n"))).toEqual({ digest: "abc" });
  });
});

describe("Retry-After", () => {
  it.each(["0", "5", "120", " 7 "])("%j is delta-seconds", (value) => {
    expect(retryAfterSeconds(value)).toBe(Number(value.trim()));
  });

  it.each([
    "-5",
    "+5",
    "1e3",
    "1.5",
    "nan",
    "NaN",
    "inf",
    "Infinity",
    "abc 2030",
    "soon 3",
    "1_000",
    "0x10",
    "",
    "Sun, 31 Feb 2099 08:49:37 GMT",
    "Sun, 06 Nov 1994 25:49:37 GMT",
  ])("%j is as if absent", (value) => {
    expect(retryAfterSeconds(value)).toBeUndefined();
  });

  it("an HTTP-date in each of RFC 9110's three forms is the seconds until then, 0 when past", () => {
    const ahead = new Date(Date.now() + 30_000);
    expect(retryAfterSeconds(ahead.toUTCString())).toBeGreaterThan(28);
    expect(retryAfterSeconds(ahead.toUTCString())).toBeLessThanOrEqual(30);
    expect(retryAfterSeconds("Sun, 06 Nov 1994 08:49:37 GMT")).toBe(0);
    expect(retryAfterSeconds("Sunday, 06-Nov-94 08:49:37 GMT")).toBe(0);
    expect(retryAfterSeconds("Sun Nov  6 08:49:37 1994")).toBe(0);
  });

  it.each(["abc 2030", "1e3", "-5"])(
    "a 429 with %j is retried after the backoff, not at once nor refused",
    async (value) => {
      server = await scriptedServer((_, n) =>
        n === 0
          ? {
              status: 429,
              headers: { "retry-after": value },
              body: { error: { code: "rate_limited" } },
            }
          : { status: 200, body: { data: [] } },
      );
      const client = new Toolgate({ apiKey: "tg_test_key", baseUrl: server.url });
      const started = Date.now();
      await client.keys.list();
      const waited = Date.now() - started;
      expect(server.received).toHaveLength(2);
      expect(waited).toBeGreaterThanOrEqual(200); // the first backoff: 250–500 ms
    },
  );

  it("one over 60 s is still returned as the error, with retryAfter", async () => {
    server = await scriptedServer(() => ({
      status: 429,
      headers: { "retry-after": "1000" },
      body: { error: { code: "rate_limited", message: "slow down" } },
    }));
    const error = await new Toolgate({ apiKey: "tg_test_key", baseUrl: server.url }).keys
      .list()
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 429, retryAfter: 1000 });
    expect(server.received).toHaveLength(1);
  });
});

describe("a caller's signal shared by many retried calls", () => {
  it("keeps no listener from the retries' waits: none left, no MaxListenersExceededWarning", async () => {
    server = await scriptedServer((_, n) =>
      n % 2 === 0
        ? {
            status: 429,
            headers: { "retry-after": "0" },
            body: { error: { code: "rate_limited" } },
          }
        : CALLED,
    );
    const client = new Toolgate({ apiKey: "tg_test_key", baseUrl: server.url });
    const controller = new AbortController();
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on("warning", onWarning);
    try {
      for (let i = 0; i < 15; i++)
        await client.tools.call("hash", { text: "a" }, { signal: controller.signal });
      await new Promise((resolve) => setImmediate(resolve)); // a warning is emitted on the next tick
    } finally {
      process.off("warning", onWarning);
    }
    expect(server.received).toHaveLength(30);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    expect(warnings).not.toContain("MaxListenersExceededWarning");
  });
});

describe("a paged walk", () => {
  it("handed back the cursor that fetched the page stops with invalid_response", async () => {
    server = await scriptedServer(() => ({
      status: 200,
      body: { data: [{ id: "evt_1", event: "x", timestamp: "t", data: {} }], next_cursor: "same" },
    }));
    const client = new Toolgate({ apiKey: "tg_test_key", baseUrl: server.url });
    const seen: unknown[] = [];
    const error = await (async () => {
      for await (const event of client.account.events()) seen.push(event);
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolgateError);
    expect(error).toMatchObject({ status: 0, code: "invalid_response" });
    expect(server.received).toHaveLength(2);
    expect(seen).toHaveLength(2);
  });

  it("handed back a cursor seen pages before stops too; the caller's own start cursor counts", async () => {
    const cursors: Record<string, string> = { start: "b", b: "c", c: "start" };
    server = await scriptedServer((request) => {
      const at = new URL(request.url, "http://x").searchParams.get("cursor") ?? "";
      return { status: 200, body: { data: [], next_cursor: cursors[at] ?? null } };
    });
    const client = new Toolgate({ apiKey: "tg_test_key", baseUrl: server.url });
    const error = await (async () => {
      for await (const _ of client.usage.list({ cursor: "start" }));
    })().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "invalid_response" });
    expect(
      server.received.map((r) => new URL(r.url, "http://x").searchParams.get("cursor")),
    ).toEqual(["start", "b", "c"]);
  });
});

describe("a paged walk of empty pages that each name a new next page", () => {
  const cursorOf = (url: string) => new URL(url, "http://x").searchParams.get("cursor");

  it("stops with invalid_response after 10 in a row, not asking for ever", async () => {
    server = await scriptedServer((_, n) => ({
      status: 200,
      body: { data: [], next_cursor: `c${n}` },
    }));
    const client = new Toolgate({ apiKey: "tg_test_key", baseUrl: server.url });
    const error = await (async () => {
      for await (const _ of client.account.events());
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolgateError);
    expect(error).toMatchObject({ status: 0, code: "invalid_response" });
    expect((error as ToolgateError).message).toMatch(/10 pages in a row with no items/);
    expect(server.received).toHaveLength(10);
  });

  it("walks on when a page with items comes before the tenth: the count starts again", async () => {
    server = await scriptedServer((_, n) => ({
      status: 200,
      body: {
        data: n === 9 ? [{ id: "evt_1", event: "x", timestamp: "t", data: {} }] : [],
        next_cursor: n < 18 ? `c${n}` : null,
      },
    }));
    const client = new Toolgate({ apiKey: "tg_test_key", baseUrl: server.url });
    const seen: unknown[] = [];
    for await (const event of client.account.events()) seen.push(event);
    expect(seen).toHaveLength(1);
    expect(server.received.map((r) => cursorOf(r.url))).toHaveLength(19);
  });
});

describe("an answer body over 384 MiB", () => {
  /** A fetch answering a body of `mib` MiB, the same 1 MiB chunk again and again (cheap to make). */
  const hugeAnswer = (mib: number, calls: string[]) => {
    const chunk = new Uint8Array(1024 * 1024).fill(0x20);
    return (async (input: string | URL | Request) => {
      calls.push(String(input));
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent++ < mib) controller.enqueue(chunk);
          else controller.close();
        },
      });
      return new Response(body, { status: 200, headers: { "content-type": "application/json" } });
    }) as typeof fetch;
  };

  it("is invalid_response, not a lost connection, and is not retried", async () => {
    const calls: string[] = [];
    const client = new Toolgate({
      apiKey: "tg_test_key",
      baseUrl: "http://127.0.0.1:9",
      fetch: hugeAnswer(385, calls),
      maxRetries: 2,
    });
    for (const call of [() => client.keys.list(), () => client.tools.call("hash", { text: "a" })]) {
      calls.length = 0;
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ToolgateError);
      expect(error).toMatchObject({ status: 0, code: "invalid_response" });
      expect((error as ToolgateError).message).toMatch(/with a body over 384 MiB/);
      expect(calls).toHaveLength(1);
    }
  });

  it("is refused at once when its Content-Length says so", async () => {
    server = await scriptedServer(() => ({
      status: 200,
      headers: { "content-length": String(384 * 1024 * 1024 + 1) },
      body: "{}",
    }));
    const client = new Toolgate({ apiKey: "tg_test_key", baseUrl: server.url, maxRetries: 2 });
    const error = await client.keys.list().catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 0, code: "invalid_response" });
    expect(server.received).toHaveLength(1);
  });

  it("up to 384 MiB is read whole", async () => {
    const calls: string[] = [];
    const client = new Toolgate({
      apiKey: "tg_test_key",
      baseUrl: "http://127.0.0.1:9",
      fetch: hugeAnswer(3, calls),
    });
    // Spaces only: not JSON, so invalid_response for the shape, after the whole body was read.
    const error = await client.keys.list().catch((e: unknown) => e);
    expect((error as ToolgateError).message).toMatch(/not JSON/);
  });
});

describe("a 2xx answer of the wrong shape", () => {
  it.each([
    ["account.get", (c: Toolgate) => c.account.get(), { id: "acct_1", tier: "free" }],
    ["keys.create", (c: Toolgate) => c.keys.create(), { id: "key_1" }],
    ["keys.list", (c: Toolgate) => c.keys.list(), { data: "nope" }],
    ["tools.list", (c: Toolgate) => c.tools.list(), [1, 2]],
    ["usage.list", (c: Toolgate) => c.usage.list(), { data: [{ id: "x" }] }],
    ["webhooks.test", (c: Toolgate) => c.webhooks.test(), { ok: true }],
  ])("%s is invalid_response", async (_, call, body) => {
    server = await scriptedServer(() => ({ status: 200, body }));
    const error = await call(new Toolgate({ apiKey: "tg_test_key", baseUrl: server.url })).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ToolgateError);
    expect(error).toMatchObject({ status: 0, code: "invalid_response" });
  });

  it("is a clean one-line error in the CLI, exit 3 as the API's other errors", async () => {
    server = await scriptedServer(() => ({ status: 200, body: { id: "acct_1", tier: "free" } }));
    const err: string[] = [];
    process.env.TOOLGATE_API_KEY = "tg_test_key";
    try {
      const code = await run(["account", "--base-url", server.url], {
        out: () => undefined,
        err: (t) => err.push(t),
      });
      expect(code).toBe(3);
    } finally {
      delete process.env.TOOLGATE_API_KEY;
    }
    expect(err.join("\n")).toMatch(/^toolgate: invalid_response: .*wrong shape/);
    expect(err.join("\n")).not.toMatch(/TypeError|\bat \S+:\d+/);
  });
});
