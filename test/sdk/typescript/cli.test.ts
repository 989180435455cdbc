import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { run } from "../../../sdk/typescript/src/cli/main.js";
import { runWithClosedStdout } from "../../helpers/processes.js";
import { ACCOUNT } from "./scripted-server.js";

/**
 * The CLI's own rules, run in-process (`run(argv, io)`) against a stub gateway that records every
 * request: what it refuses before sending anything, and what it says. The binaries and the npm
 * bin against a real gateway are in cli-binaries.test.ts.
 */
let server: Server;
let requests: string[];
/** The JSON body of the last request that had one. */
let lastBody: unknown;
let respond: (req: IncomingMessage, res: ServerResponse) => void;
let configDir: string;

const json = (res: ServerResponse, status: number, body: unknown, headers = {}) => {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
};
const HASH = {
  name: "hash",
  title: "Hash",
  description: "Hashes text.",
  price: { credits: 1, usd: "0.002" },
  aliases: [],
  available: true,
  input_schema: { type: "object", properties: { text: { type: "string" } } },
};
/** The gateway's answers, keyed or not, for the few endpoints the tests use. */
function gateway(req: IncomingMessage, res: ServerResponse) {
  const keyed = req.headers["x-api-key"] !== undefined;
  if (req.url === "/v1/tools/hash" && req.method === "GET") return json(res, 200, HASH);
  if (req.url === "/v1/tools/hash" && !keyed)
    return json(res, 402, {
      error: { code: "payment_required", message: "Pay with x402 or send an API key." },
    });
  if (!keyed)
    return json(res, 401, {
      error: { code: "missing_api_key", message: "Send your API key in the x-api-key header." },
    });
  if (req.url === "/api/v1/account") return json(res, 200, ACCOUNT);
  if (req.url === "/v1/tools/hash")
    return json(
      res,
      200,
      { digest: "d" },
      {
        "x-credits-charged": "1",
        "x-credits-remaining": "9",
        "server-timing": "tool;dur=1.25, gateway;dur=0.40",
      },
    );
  json(res, 404, { error: { code: "not_found", message: "no" } });
}

async function toolgate(argv: string[], env: Record<string, string | undefined> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const saved = { ...process.env };
  Object.assign(process.env, {
    TOOLGATE_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    TOOLGATE_API_KEY: "tg_live_test",
    TOOLGATE_CONFIG_DIR: configDir,
  });
  for (const [k, v] of Object.entries(env))
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  try {
    const code = await run(argv, { out: (t) => out.push(t), err: (t) => err.push(t) });
    return { code, stdout: out.join("\n"), stderr: err.join("\n") };
  } finally {
    process.env = saved;
  }
}

beforeAll(async () => {
  configDir = await mkdtemp(join(tmpdir(), "toolgate-cli-args-"));
  server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    let text = "";
    req.on("data", (chunk) => (text += chunk));
    req.on("end", () => {
      if (text) lastBody = JSON.parse(text);
      respond(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
});
afterAll(async () => {
  server?.close();
  await rm(configDir, { recursive: true, force: true });
});
beforeEach(() => {
  requests = [];
  lastBody = undefined;
  respond = gateway;
});

describe("arguments a command does not read", () => {
  it("are a usage error naming them, before any request", async () => {
    for (const [argv, message] of [
      [["call", "hash", "--text", "hello", "world"], 'unexpected argument "world"'],
      [["call", "hash", "extra1", "extra2", "--text", "hello"], 'unexpected argument "extra1"'],
      [["tools", "show", "hash", "qr-code"], 'unexpected argument "qr-code"'],
      [["tools", "list", "all"], 'unexpected argument "all"'],
      [["account", "extra"], 'unexpected argument "extra"'],
      [["keys", "list", "mine"], 'unexpected argument "mine"'],
      [["keys", "revoke", "key_1", "key_2"], 'unexpected argument "key_2"'],
      [["version", "2"], 'unexpected argument "2"'],
      [["usage", "--limt", "1"], "unknown option --limt (did you mean --limit?)"],
      [["account", "--bogus-flag"], "unknown option --bogus-flag"],
      [["keys", "list", "--force"], "unknown option --force"],
      [["keys", "create", "ci", "--grace-seconds", "0"], "unknown option --grace-seconds"],
      [["webhooks", "list", "--webhook-id", "wh_1"], "unknown option --webhook-id"],
      [
        ["webhooks", "test", "--webhookid", "wh_1"],
        "unknown option --webhookid (did you mean --webhook-id?)",
      ],
      [["tools", "list", "--jsn"], "unknown option --jsn (did you mean --json?)"],
      [["login", "--base-ur", "http://x"], "unknown option --base-ur (did you mean --base-url?)"],
      [
        ["account", "--api-key", "tg_live_x"],
        "unknown option --api-key: a key is never taken as an argument; set TOOLGATE_API_KEY or run `toolgate login`",
      ],
    ] as const) {
      const result = await toolgate([...argv]);
      expect([argv.join(" "), result]).toEqual([
        argv.join(" "),
        { code: 2, stdout: "", stderr: `toolgate: ${message}` },
      ]);
    }
    expect(requests).toEqual([]);
  });

  it("still runs the commands given what they read", async () => {
    for (const argv of [
      ["call", "hash", "--text", "hello world", "--json"],
      [
        "account",
        "--json",
        "--base-url",
        `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      ],
      ["version", "--json"],
      ["--version"],
    ])
      expect([argv.join(" "), (await toolgate(argv)).code]).toEqual([argv.join(" "), 0]);
  });

  it("no command, with or without options, is a usage error: help on standard error, JSON with --json", async () => {
    for (const argv of [[], ["--base-url", "http://x"]]) {
      const result = await toolgate(argv);
      expect([argv.join(" "), result.code, result.stdout, result.stderr]).toEqual([
        argv.join(" "),
        2,
        "",
        expect.stringContaining("Usage: toolgate <command>"),
      ]);
    }
    const json = await toolgate(["--json"]);
    expect([json.code, json.stdout, JSON.parse(json.stderr)]).toEqual([
      2,
      "",
      {
        error: {
          status: 0,
          code: "usage_error",
          message: "no command given; run `toolgate --help` for the commands",
        },
      },
    ]);
    expect(await toolgate(["--help"])).toMatchObject({ code: 0, stderr: "" });
  });
});

describe("what it says", () => {
  it("with no key, how to give one to the CLI (and, for a call, how to pay with a wallet)", async () => {
    const noKey = { TOOLGATE_API_KEY: undefined };
    expect(await toolgate(["account"], noKey)).toEqual({
      code: 3,
      stdout: "",
      stderr:
        "toolgate: missing_api_key: Send your API key in the x-api-key header.\n" +
        "toolgate: no API key was given: run `toolgate login` or set TOOLGATE_API_KEY.",
    });
    const call = await toolgate(["call", "hash", "--text", "hi"], noKey);
    expect([call.code, call.stderr.split("\n")[1]]).toEqual([
      3,
      "toolgate: no API key was given: run `toolgate login` or set TOOLGATE_API_KEY, or pay for the call with x402: --wallet-key-file PATH.",
    ]);
    const asJson = await toolgate(["account", "--json"], noKey);
    expect(JSON.parse(asJson.stderr).error).toMatchObject({
      code: "missing_api_key",
      hint: "no API key was given: run `toolgate login` or set TOOLGATE_API_KEY.",
    });
  });

  it("a call's cost on standard error, as JSON with --json; standard output is the tool's output", async () => {
    expect(await toolgate(["call", "hash", "--text", "hi"])).toEqual({
      code: 0,
      stdout: JSON.stringify({ digest: "d" }, null, 2),
      stderr: "(1 credit(s), 9 left; tool 1.25 ms, gateway 0.4 ms)",
    });
    const asJson = await toolgate(["call", "hash", "--text", "hi", "--json"]);
    expect([asJson.code, JSON.parse(asJson.stdout), JSON.parse(asJson.stderr)]).toEqual([
      0,
      { digest: "d" },
      { credits_charged: 1, credits_remaining: 9, tool_ms: 1.25, gateway_ms: 0.4 },
    ]);
  });
});

describe("the npm bin (bin.ts under Node)", () => {
  it("ends quietly when the reader has closed standard output (toolgate tools list | head -1)", async () => {
    // The answer comes late, so the pipe is closed before anything is written to it.
    respond = (_req, res) =>
      setTimeout(() => json(res, 200, { object: "list", data: [HASH] }), 300);
    expect(
      await runWithClosedStdout(
        process.execPath,
        [
          "--import",
          "tsx",
          new URL("../../../sdk/typescript/src/cli/bin.ts", import.meta.url).pathname,
          "tools",
          "list",
          "--json",
        ],
        {
          ...process.env,
          TOOLGATE_BASE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          TOOLGATE_API_KEY: "tg_live_test",
          TOOLGATE_CONFIG_DIR: configDir,
        },
      ),
    ).toEqual([0, ""]);
    expect(requests).toEqual(["GET /v1/tools"]);
  });
});

/** A tool whose fields have no `type`, or an `anyOf`, as the gateway's json-schema-validate, js-sandbox, math-evaluate, jwt-decode have. */
const UNTYPED = {
  ...HASH,
  name: "untyped",
  input_schema: {
    type: "object",
    properties: {
      schema: { anyOf: [{ type: "object" }, { type: "boolean" }] },
      data: { description: "Any JSON value." },
      expression: { anyOf: [{ type: "string" }, { type: "array", items: { type: "string" } }] },
      public_key: { anyOf: [{ type: "string" }, { type: "object" }] },
      code: { type: "string" },
      precision: { type: "integer" },
    },
  },
};

describe("field flags typed from schemas without a type", () => {
  beforeEach(() => {
    respond = (req, res) => {
      if (req.url === "/v1/tools/untyped" && req.method === "GET") return json(res, 200, UNTYPED);
      if (req.url === "/v1/tools/untyped") return json(res, 200, { ok: true });
      gateway(req, res);
    };
  });
  /** The input a call sent, after the previous one's is forgotten. */
  const sent = async (argv: string[]) => {
    lastBody = undefined;
    const result = await toolgate(["call", "untyped", ...argv]);
    return { code: result.code, body: lastBody, stderr: result.code ? result.stderr : "" };
  };

  it("parse JSON where the field takes it, and keep text where the field takes text", async () => {
    expect(
      await sent(["--schema", '{"type":"object","required":["a"]}', "--data", '{"a":1}']),
    ).toEqual({
      code: 0,
      body: { schema: { type: "object", required: ["a"] }, data: { a: 1 } },
      stderr: "",
    });
    expect(await sent(["--schema", "true", "--data", "hello"])).toMatchObject({
      body: { schema: true, data: "hello" },
    });
    expect(await sent(["--data", "5", "--expression", "1+2"])).toMatchObject({
      body: { data: 5, expression: "1+2" },
    });
    // "2" parses to a number, which the field does not take: it is the text "2".
    expect(await sent(["--expression", "2"])).toMatchObject({ body: { expression: "2" } });
    expect(await sent(["--expression", '["x = 2","x * 3"]'])).toMatchObject({
      body: { expression: ["x = 2", "x * 3"] },
    });
    const pem = "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----";
    // A value that starts with "--" (a PEM) is given with "=": spaced, it would read as a flag.
    expect(await sent([`--public_key=${pem}`])).toMatchObject({ body: { public_key: pem } });
    expect(await sent(["--public_key", '{"kty":"OKP"}'])).toMatchObject({
      body: { public_key: { kty: "OKP" } },
    });
    // A string field takes the text as is, JSON or not.
    expect(await sent(["--code", '{"a":1}'])).toMatchObject({ body: { code: '{"a":1}' } });
  });

  it("a value the field cannot take is a usage error, before the call", async () => {
    expect(await sent(["--schema", "not json"])).toEqual({
      code: 2,
      body: undefined,
      stderr: "toolgate: --schema must be a JSON object or true or false",
    });
    expect(await sent(["--precision", "high"])).toEqual({
      code: 2,
      body: undefined,
      stderr: "toolgate: --precision must be an integer",
    });
    expect(requests).not.toContain("POST /v1/tools/untyped");
  });

  it("tools show names each field's types, json for a field that takes any value", async () => {
    const shown = await toolgate(["tools", "show", "untyped"]);
    expect(shown.stdout).toContain("--schema (object|boolean)");
    expect(shown.stdout).toContain("--data (json)  Any JSON value.");
    expect(shown.stdout).toContain("--expression (string|array)");
  });
});

describe("tool fields named like the CLI's options", () => {
  /** A tool with fields named json, input and force, as yaml-convert and js-sandbox have. */
  const CLASHING = {
    ...HASH,
    name: "clashing",
    input_schema: {
      type: "object",
      properties: {
        code: { type: "string" },
        json: { description: "A JSON value." },
        input: { description: "A JSON value." },
        force: { type: "boolean" },
      },
    },
  };
  beforeEach(() => {
    respond = (req, res) => {
      if (req.url === "/v1/tools/clashing" && req.method === "GET") return json(res, 200, CLASHING);
      if (req.url === "/v1/tools/clashing") return json(res, 200, { ok: true });
      gateway(req, res);
    };
  });

  it("are given as --field.NAME, which always means the tool's field", async () => {
    const result = await toolgate([
      "call",
      "clashing",
      "--code",
      "input.a + 1",
      "--field.input",
      '{"a":1}',
      '--field.json={"b":2}',
      "--field.force",
      "--json",
    ]);
    expect([result.code, lastBody]).toEqual([
      0,
      { code: "input.a + 1", input: { a: 1 }, json: { b: 2 }, force: true },
    ]);
    // Any field can be given so, and a field given twice is a usage error.
    expect((await toolgate(["call", "clashing", "--field.code", "1"])).code).toBe(0);
    expect(lastBody).toEqual({ code: "1" });
    expect(await toolgate(["call", "clashing", "--code", "1", "--field.code", "2"])).toMatchObject({
      code: 2,
      stderr: "toolgate: --field.code gives the field code a second time",
    });
  });

  it("tools show offers --field.NAME for them", async () => {
    const shown = (await toolgate(["tools", "show", "clashing"])).stdout;
    expect(shown).toContain("\n  --code (string)");
    expect(shown).toContain("\n  --field.json (json)  A JSON value.");
    expect(shown).toContain("\n  --field.input (json)");
    expect(shown).toContain("\n  --field.force (boolean)");
  });

  it("--json=VALUE is a usage error, not a value dropped; --input with field flags says how", async () => {
    expect(await toolgate(["call", "clashing", '--json={"a":1}'])).toEqual({
      code: 2,
      stdout: "",
      stderr:
        "toolgate: --json takes no value (a tool's field named json is given as --field.json VALUE)",
    });
    expect(
      await toolgate(["call", "clashing", "--code", "input.a", "--input", '{"a":1}']),
    ).toMatchObject({
      code: 2,
      stderr:
        "toolgate: give the input either with --input or with field flags, not both (a tool's field named input is --field.input)",
    });
    expect(requests).not.toContain("POST /v1/tools/clashing");
  });
});

describe("empty environment variables", () => {
  it("are unset, as in the library: the stored login's key and gateway are used", async () => {
    const port = (server.address() as AddressInfo).port;
    await writeFile(
      join(configDir, "config.json"),
      JSON.stringify({ api_key: "tg_live_stored", base_url: `http://127.0.0.1:${port}` }),
    );
    try {
      expect(
        await toolgate(["account", "--json"], { TOOLGATE_BASE_URL: "", TOOLGATE_API_KEY: "" }),
      ).toMatchObject({ code: 0, stdout: JSON.stringify(ACCOUNT, null, 2) });
    } finally {
      await rm(join(configDir, "config.json"), { force: true });
    }
  });
});

describe("a stored config.json other users can open", () => {
  it("is used, with one warning on standard error naming the file and chmod 600; a 0600 file gets none", async () => {
    const port = (server.address() as AddressInfo).port;
    const file = join(configDir, "config.json");
    const env = { TOOLGATE_BASE_URL: "", TOOLGATE_API_KEY: "" };
    try {
      for (const mode of [0o644, 0o604, 0o620, 0o666]) {
        await writeFile(
          file,
          JSON.stringify({ api_key: "tg_live_stored", base_url: `http://127.0.0.1:${port}` }),
        );
        await chmod(file, mode);
        const warned = await toolgate(["account", "--json"], env);
        expect([mode.toString(8), warned.code, warned.stdout, warned.stderr]).toEqual([
          mode.toString(8),
          0,
          JSON.stringify(ACCOUNT, null, 2),
          `toolgate: warning: ${file} (mode 0${mode.toString(8)}) can be read or changed by other users, and it holds your login; run \`chmod 600 ${file}\``,
        ]);
      }
      await chmod(file, 0o600);
      expect(await toolgate(["account", "--json"], env)).toEqual({
        code: 0,
        stdout: JSON.stringify(ACCOUNT, null, 2),
        stderr: "",
      });
    } finally {
      await rm(file, { force: true });
    }
  });
});

describe("usage errors", () => {
  it("are JSON on standard error with --json, as API errors are", async () => {
    for (const argv of [
      ["account", "--bogus", "--json"],
      ["--json", "call", "hash", "--json=1"],
    ]) {
      const result = await toolgate(argv);
      expect([result.code, result.stdout, JSON.parse(result.stderr)]).toEqual([
        2,
        "",
        { error: { status: 0, code: "usage_error", message: expect.any(String) } },
      ]);
    }
    expect(
      JSON.parse((await toolgate(["account", "--bogus", "--json"])).stderr).error.message,
    ).toBe("unknown option --bogus");
  });

  it("a wallet's limits without --wallet-key-file are refused, not ignored", async () => {
    for (const name of ["--max-per-call", "--max-per-session"])
      expect(await toolgate(["call", "hash", "--text", "hi", name, "5"])).toEqual({
        code: 2,
        stdout: "",
        stderr: `toolgate: ${name} needs --wallet-key-file: it limits what a wallet pays, and without one the call is paid with the API key`,
      });
    expect(requests).toEqual([]);
  });
});

describe("a base URL with a query or fragment", () => {
  it("is a usage error before any request: the path before it would be dropped, and the login's key sent outside the gateway", async () => {
    const port = (server.address() as AddressInfo).port;
    for (const url of [`http://127.0.0.1:${port}/gw?x=1`, `http://127.0.0.1:${port}/gw#f`])
      expect(await toolgate(["account", "--base-url", url])).toEqual({
        code: 2,
        stdout: "",
        stderr: `toolgate: --base-url must not hold a query (?…) or fragment (#…) (got "${url}"): give the gateway's address alone, such as https://toolgate.example/gw`,
      });
    expect(
      (await toolgate(["account"], { TOOLGATE_BASE_URL: `http://127.0.0.1:${port}/?` })).stderr,
    ).toContain("TOOLGATE_BASE_URL must not hold a query");
    expect(requests).toEqual([]);
  });
});

describe("--input text", () => {
  const file = () => join(configDir, "input.json");
  it("from a file: UTF-8, a byte-order mark left out; other bytes refused before the call", async () => {
    await writeFile(file(), Buffer.from([0xef, 0xbb, 0xbf, ...Buffer.from('{"text":"café"}')]));
    expect((await toolgate(["call", "hash", "--input", `@${file()}`])).code).toBe(0);
    expect(lastBody).toEqual({ text: "café" });
    requests = [];
    // "café" in Latin-1: é is the byte 0xe9, not UTF-8.
    await writeFile(file(), Buffer.from('{"text":"caf\xe9"}', "latin1"));
    expect(await toolgate(["call", "hash", "--input", `@${file()}`])).toEqual({
      code: 2,
      stdout: "",
      stderr: `toolgate: ${file()} is not UTF-8 text: save it as UTF-8 (its bytes would otherwise reach the tool as U+FFFD)`,
    });
    expect(requests).toEqual([]);
  });

  it("that is not JSON says what the parser found; JSON that is not an object says what it is", async () => {
    const comma = await toolgate(["call", "hash", "--input", '{"text":"x",}']);
    expect([comma.code, comma.stderr]).toEqual([
      2,
      expect.stringMatching(/^toolgate: --input is not valid JSON: .+/),
    ]);
    expect(comma.stderr).not.toBe("toolgate: --input is not valid JSON: ");
    expect((await toolgate(["call", "hash", "--input", "[1]"])).stderr).toBe(
      "toolgate: --input must be a JSON object (got an array)",
    );
    expect(requests).toEqual([]);
  });

  it("an argument holding U+FFFD (bytes that were not UTF-8, as the runtime decoded them) is refused", async () => {
    expect(await toolgate(["call", "hash", "--text", "caf\uFFFD"])).toEqual({
      code: 2,
      stdout: "",
      stderr:
        'toolgate: the argument "caf\uFFFD" holds U+FFFD (\uFFFD): it was probably not UTF-8 text (check the terminal\'s encoding, e.g. LANG=C.UTF-8); to send U+FFFD itself, write it as \\ufffd in --input JSON',
    });
    expect((await toolgate(["call", "hash", "--input", '{"text":"\\ufffd"}'])).code).toBe(0);
    expect(lastBody).toEqual({ text: "\uFFFD" });
  });
});

describe("text from the gateway", () => {
  it("cannot drive the terminal in human output (controls shown escaped); --json is the same JSON value", async () => {
    const title = "Hash\u001b]0;pwned\u0007\u009b2J\u202e";
    respond = (req, res) => {
      if (req.url === "/v1/tools")
        return json(res, 200, { object: "list", data: [{ ...HASH, title }] });
      if (req.url === "/api/v1/account")
        return json(res, 400, {
          error: { code: "bad\u001b[31m", message: "m\u001b[2J cleared\r\nforged" },
        });
      gateway(req, res);
    };
    const list = await toolgate(["tools", "list"]);
    expect(list.stdout).toContain("Hash\\x1b]0;pwned\\x07\\x9b2J\\u202e");
    const raw = (text: string) =>
      ["\u001b", "\u0007", "\u009b", "\u202e"].filter((c) => text.includes(c));
    expect(raw(list.stdout)).toEqual([]);
    const listed = await toolgate(["tools", "list", "--json"]);
    expect(raw(listed.stdout)).toEqual([]);
    expect(JSON.parse(listed.stdout)[0].title).toBe(title);
    expect((await toolgate(["account"])).stderr).toBe(
      "toolgate: bad\\x1b[31m: m\\x1b[2J cleared\\x0d\nforged",
    );
    const asJson = JSON.parse((await toolgate(["account", "--json"])).stderr);
    expect(asJson.error.message).toBe("m\u001b[2J cleared\r\nforged");
  });

  it("--json errors keep Retry-After and the gateway's other fields", async () => {
    respond = (_req, res) =>
      json(
        res,
        402,
        {
          error: {
            type: "payment_error",
            code: "insufficient_credits",
            message: "Not enough credits.",
            credits_remaining: 0,
            request_id: "req_1",
          },
        },
        { "retry-after": "30" },
      );
    const result = await toolgate(["account", "--json"]);
    expect([result.code, JSON.parse(result.stderr)]).toEqual([
      3,
      {
        error: {
          status: 402,
          code: "insufficient_credits",
          message: "Not enough credits.",
          request_id: "req_1",
          retry_after: 30,
          details: { credits_remaining: 0 },
        },
      },
    ]);
  });
});

describe("a call whose answer is lost", () => {
  it("says which Idempotency-Key it was sent with, and to re-run with it (human and --json)", async () => {
    const keys: string[] = [];
    respond = (req, res) => {
      if (req.method === "POST") {
        keys.push(req.headers["idempotency-key"] as string);
        return req.socket.destroy();
      }
      gateway(req, res);
    };
    const human = await toolgate(["call", "hash", "--input", '{"text":"hi"}']);
    const key = keys[0]!;
    expect(new Set(keys)).toEqual(new Set([key]));
    expect([human.code, human.stderr.split("\n")]).toEqual([
      4,
      [
        expect.stringMatching(
          /^toolgate: network_error: .*the request may have been received and run\.$/,
        ),
        `toolgate: re-run the call within 24 h with the same input and --idempotency-key ${key}: if it ran, the gateway answers with its result and does not charge it again.`,
      ],
    ]);
    expect(human.stderr).not.toContain("list what exists");
    expect(human.stderr).not.toContain("verbose: true");
    const given = await toolgate([
      "call",
      "hash",
      "--input",
      '{"text":"hi"}',
      "--idempotency-key",
      "k-1",
      "--json",
    ]);
    expect([given.code, JSON.parse(given.stderr).error]).toEqual([
      4,
      expect.objectContaining({
        code: "network_error",
        idempotency_key: "k-1",
        hint: expect.stringContaining("--idempotency-key k-1"),
      }),
    ]);
    expect(keys.at(-1)).toBe("k-1");
  });

  it("--timeout SECONDS bounds each attempt", async () => {
    respond = (req, res) => {
      if (req.method !== "POST") gateway(req, res);
    };
    const started = Date.now();
    const result = await toolgate(["call", "hash", "--input", '{"text":"hi"}', "--timeout", "0.2"]);
    expect([result.code, result.stderr]).toEqual([
      4,
      expect.stringContaining("toolgate: timeout: No answer from"),
    ]);
    expect(result.stderr).toContain("within 200 ms");
    expect(Date.now() - started).toBeLessThan(10_000);
    expect((await toolgate(["account", "--timeout", "0"])).stderr).toBe(
      'toolgate: --timeout must be a number of seconds above 0 and at most 2147483 (got "0")',
    );
    expect((await toolgate(["--help"])).stdout).toContain("--timeout SECONDS");
  });
});

describe("arguments that do not add up", () => {
  it("are usage errors before any request", async () => {
    for (const [argv, message] of [
      [
        ["keys", "create", "a", "--name", "b"],
        "give the key's name once: `keys create a` or `keys create --name b`, not both",
      ],
      [
        ["call", "hash", "--text", "hi", "--api-key", "tg_live_x"],
        "unknown option --api-key: a key is never taken as an argument; set TOOLGATE_API_KEY or run `toolgate login`",
      ],
      [["usage", "--limit", "9007199254740993"], "--limit must be at most 9007199254740991"],
    ] as const)
      expect([argv.join(" "), await toolgate([...argv])]).toEqual([
        argv.join(" "),
        { code: 2, stdout: "", stderr: `toolgate: ${message}` },
      ]);
    expect(requests).toEqual([]);
  });

  it("help says what tools show shows", async () => {
    const help = (await toolgate(["--help"])).stdout;
    expect(help).toMatch(/tools show NAME +one tool: description, price, input fields/);
    expect(help).not.toContain("input and output schemas");
  });
});
