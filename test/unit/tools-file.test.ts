import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.js";

/**
 * TOOLS_FILE is read and checked at start-up: a good file becomes the operator's tools; a bad
 * one stops the gateway with every problem named by its entry.
 */
const dir = mkdtempSync(join(tmpdir(), "toolgate-tools-file-unit-"));
let n = 0;
const fileWith = (text: string, ext = "yaml") => {
  const path = join(dir, `tools-${n++}.${ext}`);
  writeFileSync(path, text);
  return path;
};

const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

const good = {
  name: "weather",
  description: "Current weather for a city.",
  url: "https://api.example.com/weather",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  price_credits: 3,
};

describe("TOOLS_FILE", () => {
  it("reads YAML and JSON alike, with defaults and the environment's values in headers", () => {
    const yaml = fileWith(
      [
        "tools:",
        "  - name: weather",
        "    description: Current weather.",
        "    url: https://api.example.com/weather",
        "    input_schema: { type: object }",
        "    price_credits: 2",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: TOOLS_FILE's own ${NAME} syntax, not a template
        "    headers: { X-Key: '${WEATHER_KEY}' }",
      ].join("\n"),
    );
    const config = loadConfig({ TOOLS_FILE: yaml, WEATHER_KEY: "k-123" });
    expect(config.upstream.tools).toEqual([
      {
        name: "weather",
        title: "weather",
        description: "Current weather.",
        url: "https://api.example.com/weather",
        inputSchema: { type: "object" },
        outputSchema: { type: "object" },
        priceCredits: 2,
        timeoutMs: 10_000,
        category: "data",
        tags: [],
        headers: { "X-Key": "k-123" },
        secrets: ["k-123"],
      },
    ]);
    const json = fileWith(JSON.stringify({ tools: [good] }), "json");
    expect(loadConfig({ TOOLS_FILE: json }).upstream.tools.map((t) => t.name)).toEqual(["weather"]);
  });

  it("names the bad entry and what is wrong with it, every problem at once", () => {
    const file = fileWith(
      JSON.stringify({
        tools: [
          good,
          { ...good, name: "hash" },
          { ...good, name: "weather" },
          { ...good, name: "plain", url: "http://api.example.com/x" },
          {
            ...good,
            name: "bad-schema",
            input_schema: { type: "object", properties: { a: { type: "strnig" } } },
          },
          { ...good, name: "no-price", price_credits: undefined },
          // biome-ignore lint/suspicious/noTemplateCurlyInString: TOOLS_FILE's own ${NAME} syntax, not a template
          { ...good, name: "secret", headers: { Authorization: "Bearer ${NOT_SET_ANYWHERE}" } },
          { ...good, name: "port-zero", url: "https://api.example.com:0/x" },
        ],
      }),
      "json",
    );
    const problems = problemsOf({ TOOLS_FILE: file });
    expect(problems).toEqual([
      expect.stringMatching(
        /^TOOLS_FILE .*: tools\[1\] \(hash\): name: hash is already a catalogue tool's name$/,
      ),
      expect.stringMatching(/tools\[2\] \(weather\): name: weather is declared twice$/),
      expect.stringMatching(/tools\[3\] \(plain\): url: endpoint URLs must use https$/),
      expect.stringMatching(
        /tools\[4\] \(bad-schema\): input_schema: is not a valid JSON Schema: /,
      ),
      expect.stringMatching(/tools\[5\] \(no-price\): price_credits: /),
      expect.stringMatching(
        /tools\[6\] \(secret\): headers.Authorization: NOT_SET_ANYWHERE not set in the environment$/,
      ),
      expect.stringMatching(
        /tools\[7\] \(port-zero\): url: port 0 is not a port a server can listen on$/,
      ),
    ]);
  });

  it("takes a header reference that is empty or blank as not set, as every setting is", () => {
    const file = fileWith(
      [
        "tools:",
        "  - name: weather",
        "    description: Current weather.",
        "    url: https://api.example.com/weather",
        "    input_schema: { type: object }",
        "    price_credits: 2",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: TOOLS_FILE's own ${NAME} syntax, not a template
        "    headers: { X-Key: '${WEATHER_KEY}' }",
      ].join("\n"),
    );
    for (const blank of ["", "  "])
      expect(problemsOf({ TOOLS_FILE: file, WEATHER_KEY: blank })).toEqual([
        expect.stringMatching(/headers.X-Key: WEATHER_KEY not set in the environment$/),
      ]);
  });

  it("refuses a header whose value Node would refuse to send (a secret with a trailing newline), naming the entry and header, never the value", () => {
    const file = fileWith(
      [
        "tools:",
        "  - name: weather",
        "    description: Current weather.",
        "    url: https://api.example.com/weather",
        "    input_schema: { type: object }",
        "    price_credits: 2",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: TOOLS_FILE's own ${NAME} syntax, not a template
        "    headers: { Authorization: 'Bearer ${WEATHER_KEY}' }",
        "  - name: forecast",
        "    description: Tomorrow's weather.",
        "    url: https://api.example.com/forecast",
        "    input_schema: { type: object }",
        "    price_credits: 2",
        '    headers: { X-Literal: "a\\rb" }',
      ].join("\n"),
    );
    for (const secret of ["s3cret-value\n", "s3cret-value\r\n", "s3cret\rvalue", "s3cret\u0000"]) {
      const problems = problemsOf({ TOOLS_FILE: file, WEATHER_KEY: secret });
      expect(problems).toEqual([
        expect.stringMatching(
          /tools\[0\] \(weather\): headers\.Authorization: not a valid HTTP header value once WEATHER_KEY is put in \(/,
        ),
        expect.stringMatching(
          /tools\[1\] \(forecast\): headers\.X-Literal: not a valid HTTP header value \(/,
        ),
      ]);
      expect(problems.join("\n")).not.toContain("s3cret");
    }
    // A value Node sends as is (tabs and Latin-1 included) still loads.
    expect(
      problemsOf({
        TOOLS_FILE: fileWith(
          JSON.stringify({ tools: [{ ...good, headers: { "X-Key": "a\tb caf\u00e9" } }] }),
          "json",
        ),
      }),
    ).toEqual([]);
  });

  it("refuses a schema whose checks of one value could stall the gateway, naming the entry and field", () => {
    const defs: Record<string, unknown> = { d22: { type: "string" } };
    for (let i = 0; i < 22; i++)
      defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
    const file = fileWith(
      JSON.stringify({
        tools: [
          {
            ...good,
            name: "exp",
            input_schema: {
              type: "object",
              $defs: defs,
              properties: { a: { not: { $ref: "#/$defs/d0" } } },
            },
          },
          {
            ...good,
            name: "uniq",
            output_schema: {
              type: "object",
              properties: { a: { type: "array", uniqueItems: true } },
            },
          },
          {
            ...good,
            name: "ok",
            input_schema: {
              type: "object",
              properties: { a: { type: "array", items: { type: "string" }, uniqueItems: true } },
            },
          },
        ],
      }),
      "json",
    );
    const problems = problemsOf({ TOOLS_FILE: file });
    expect(problems).toEqual([
      expect.stringMatching(
        /tools\[0\] \(exp\): input_schema: costs too much to check: .*more than 2000/,
      ),
      expect.stringMatching(
        /tools\[1\] \(uniq\): output_schema: costs too much to check: .*uniqueItems/,
      ),
    ]);
  });

  it("refuses a format it has no check for, naming the entry, field and format, and Ajv writes nothing to the console", () => {
    const console = [vi.spyOn(globalThis.console, "warn"), vi.spyOn(globalThis.console, "log")];
    const schema = (format: string) => ({
      type: "object",
      properties: { e: { type: "string", format } },
    });
    const file = fileWith(
      JSON.stringify({
        tools: [
          { ...good, name: "known", input_schema: schema("email") },
          { ...good, name: "typo", input_schema: schema("emial") },
          { ...good, name: "out", output_schema: schema("foo\nbar") },
        ],
      }),
      "json",
    );
    try {
      expect(problemsOf({ TOOLS_FILE: file })).toEqual([
        expect.stringMatching(
          /tools\[1\] \(typo\): input_schema: uses the unknown format "emial" at "#\/properties\/e"; known formats: .*\bemail\b/,
        ),
        // Quoted: a format's name cannot break the problem's one line.
        expect.stringMatching(
          /tools\[2\] \(out\): output_schema: uses the unknown format "foo\\nbar"/,
        ),
      ]);
      for (const spy of console) expect(spy).not.toHaveBeenCalled();
    } finally {
      for (const spy of console) spy.mockRestore();
    }
  });

  it("says so when the file is missing, unreadable as YAML, or has no tools list", () => {
    expect(problemsOf({ TOOLS_FILE: join(dir, "nope.yaml") })).toEqual([
      expect.stringMatching(/nope\.yaml: no such file$/),
    ]);
    expect(problemsOf({ TOOLS_FILE: fileWith("tools: [ {name: x") })[0]).toMatch(
      /not valid YAML or JSON/,
    );
    expect(problemsOf({ TOOLS_FILE: fileWith("- name: x") })[0]).toMatch(
      /must be an object with a "tools" list/,
    );
  });

  it("allows plain http to loopback only with the development setting, which production refuses", () => {
    const file = fileWith(
      JSON.stringify({ tools: [{ ...good, url: "http://127.0.0.1:9/tool" }] }),
      "json",
    );
    expect(problemsOf({ TOOLS_FILE: file })).toEqual([
      expect.stringMatching(/url: endpoint URLs must use https$/),
    ]);
    expect(
      loadConfig({ TOOLS_FILE: file, UPSTREAM_ALLOW_PRIVATE_TARGETS: "1" }).upstream.tools[0]!.url,
    ).toBe("http://127.0.0.1:9/tool");
    expect(problemsOf({ NODE_ENV: "production", UPSTREAM_ALLOW_PRIVATE_TARGETS: "1" })).toContain(
      "UPSTREAM_ALLOW_PRIVATE_TARGETS=1 is refused when NODE_ENV=production",
    );
  });

  it("refuses an endpoint whose host every call would refuse (an address that is not public, localhost), naming the entry; a name is judged on each call", () => {
    const hosts = [
      ["loopback", "https://127.0.0.1/x", /127\.0\.0\.1 is in the loopback range/],
      [
        "metadata",
        "https://169.254.169.254/latest",
        /169\.254\.169\.254 is in the linkLocal range/,
      ],
      ["private", "https://10.0.0.1/x", /10\.0\.0\.1 is in the private range/],
      ["mapped", "https://[::ffff:127.0.0.1]/x", /is in the loopback range/],
      ["hex-host", "https://0x7f000001/x", /127\.0\.0\.1 is in the loopback range/],
      [
        "named-loopback",
        "https://localhost:8443/x",
        /localhost does not resolve to a public address/,
      ],
      ["root-dot", "https://LOCALHOST./x", /localhost\. does not resolve to a public address/],
    ] as const;
    const file = fileWith(
      JSON.stringify({
        tools: [
          ...hosts.map(([name, url]) => ({ ...good, name, url })),
          // Judged when called, by what they resolve to then: not at start-up.
          { ...good, name: "public-ip", url: "https://93.184.216.34/x" },
          { ...good, name: "internal-name", url: "https://billing-api.corp-internal.invalid/x" },
        ],
      }),
      "json",
    );
    expect(problemsOf({ TOOLS_FILE: file })).toEqual(
      hosts.map(([name], i) =>
        expect.stringMatching(
          new RegExp(`tools\\[${i}\\] \\(${name}\\): url: .*: every call to it would be refused$`),
        ),
      ),
    );
    for (const [i, [, , reason]] of hosts.entries())
      expect(problemsOf({ TOOLS_FILE: file })[i]).toMatch(reason);
    // The development setting opens loopback and private networks, never the metadata range.
    expect(problemsOf({ TOOLS_FILE: file, UPSTREAM_ALLOW_PRIVATE_TARGETS: "1" })).toEqual([
      expect.stringMatching(
        /tools\[1\] \(metadata\): url: 169\.254\.169\.254 is in the linkLocal range/,
      ),
    ]);
  });

  it("stops the gateway process at start-up with the bad entry named (exit 78)", () => {
    const file = fileWith(JSON.stringify({ tools: [{ ...good, name: "Bad Name!" }] }), "json");
    const run = spawnSync(process.execPath, ["--import", "tsx", "src/main.ts"], {
      cwd: new URL("../..", import.meta.url).pathname,
      env: { PATH: process.env.PATH, NODE_ENV: "development", TOOLS_FILE: file, PORT: "0" },
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(run.status).toBe(78);
    expect(run.stderr).toContain(
      `TOOLS_FILE ${file}: tools[0] (Bad Name!): name: lower-case letters, digits and inner hyphens`,
    );
  });
});
