import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig, secretValues } from "../../src/config.js";
import { StartupError } from "../../src/lib/startup-error.js";
import { redactedPath, shownPath } from "../../src/http/logged-path.js";
import { secretRedactor } from "../../src/lib/redact.js";
import { startupFailureText } from "../../src/main.js";

/**
 * The one matcher of the configured secrets (src/lib/redact.ts, fed by config.ts `secretValues`).
 * The gateway's own log, status page and answers are checked with a real process in
 * test/integration/secrets-stay-out-of-logs.test.ts; here, the forms each kind of secret is
 * matched in, and what is never matched.
 */
const KEY = 'Adm1n-Pr0d!key/with+chars=and.more_xyz~"q"';
const lowerEscapes = (text: string) => text.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase());

describe("secretRedactor", () => {
  const redact = secretRedactor([KEY]);

  it("matches a percent-encoded secret whatever the case of its escapes' hex digits", () => {
    const encoded = encodeURIComponent(KEY); // …key%2Fwith%2Bchars%3Dand…
    for (const text of [
      encoded,
      lowerEscapes(encoded),
      encoded.replace("%2F", "%2f"),
      new URL(`http://h/${KEY}`).pathname.slice(1),
      lowerEscapes(new URL(`http://h/${KEY}`).pathname.slice(1)),
    ])
      expect(redact(`GET /x/${text}/y`), text).toBe("GET /x/[redacted]/y");
  });

  it("matches the secret's own text only as written", () => {
    for (const text of [
      KEY.toUpperCase(),
      KEY.toLowerCase(),
      encodeURIComponent(KEY.toLowerCase()),
    ])
      expect(redact(text), text).toBe(text);
    // A secret holding what looks like an escape keeps it as text: `%2b` is not `%2B` there.
    const literal = secretRedactor(["token%2Bwith-escape"]);
    expect(literal("token%2Bwith-escape")).toBe("[redacted]");
    expect(literal("token%2bwith-escape")).toBe("token%2bwith-escape");
  });

  it("keeps a secret with ? or # whole (a URL's path ends there) and redacts nothing else", () => {
    // Its path form used to be what precedes the `?`: an empty form then matched everywhere.
    const redactQ = secretRedactor(["?starts-with-a-question", "has#a-hash-inside"]);
    expect(redactQ("hello world")).toBe("hello world");
    expect(redactQ("has is a word")).toBe("has is a word");
    expect(redactQ(`/x/${encodeURIComponent("?starts-with-a-question")}`)).toBe("/x/[redacted]");
    expect(redactQ("has#a-hash-inside")).toBe("[redacted]");
  });

  it("matches a URL's password, however short, only where it sits in a URL, in each way a URL writes it", () => {
    const config = loadConfig({
      NODE_ENV: "test",
      REDIS_URL: "redis://:p^1@127.0.0.1:6379", // the URL parser writes `p%5E1`
      SMTP_URL: "smtp://mailer:s%2b1@127.0.0.1:25", // `s+1`, escaped in lower case
    });
    const redactUrls = secretRedactor(secretValues(config));
    for (const url of [
      "redis://:p^1@127.0.0.1:6379",
      "redis://:p%5E1@127.0.0.1:6379",
      "redis://:p%5e1@127.0.0.1:6379",
      "smtp://mailer:s%2b1@127.0.0.1:25",
      "smtp://mailer:s%2B1@127.0.0.1:25",
      "smtp://mailer:s+1@127.0.0.1:25",
    ])
      expect(redactUrls(url), url).not.toMatch(/p\^1|p%5E1|s%2b1|s\+1/i);
    // Alone, a short password is ordinary text.
    expect(redactUrls("p^1 s+1 keep:s+1 as is")).toBe("p^1 s+1 keep:s+1 as is");
  });

  it("knows the environment's values in an upstream tool's headers (TOOLS_FILE) as secrets", () => {
    const dir = mkdtempSync(join(tmpdir(), "toolsfile-"));
    const file = join(dir, "tools.yaml");
    writeFileSync(
      file,
      [
        "tools:",
        "  - name: weather",
        "    description: Current weather.",
        "    url: https://api.example.com/weather",
        "    input_schema: { type: object }",
        "    price_credits: 2",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: TOOLS_FILE's own ${NAME} syntax, not a template
        "    headers: { Authorization: 'Bearer ${WEATHER_API_KEY}' }",
      ].join("\n"),
    );
    const key = "wx-live-0123456789abcdef";
    const redactKey = secretRedactor(
      secretValues(loadConfig({ NODE_ENV: "test", TOOLS_FILE: file, WEATHER_API_KEY: key })),
    );
    expect(redactKey(`upstream refused Bearer ${key}`)).toBe("upstream refused Bearer [redacted]");
    expect(redactKey("Bearer and weather stay")).toBe("Bearer and weather stay");
  });

  it("knows the /metrics bearer token as a secret", () => {
    const token = "metrics-token-0123456789";
    const redactToken = secretRedactor(
      secretValues(loadConfig({ NODE_ENV: "test", METRICS_TOKEN: token })),
    );
    expect(redactToken(`authorization: Bearer ${token}`)).toBe("authorization: Bearer [redacted]");
  });
});

describe("a request's path in the log", () => {
  const SECRET = "adminkey-SECRETVALUE-0123456789";
  const redact = secretRedactor([SECRET]);

  it("holds no configured secret however a client percent-encoded it, nor a key", () => {
    const escapedAll = [...SECRET]
      .map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`)
      .join("");
    // As a 404 repeats it (the request log writes it alike, redactedPath below).
    expect(shownPath("/nothing/adminkey%2DSECRETVALUE%2D0123456789?q=1", redact)).toBe(
      "/nothing/[redacted]",
    );
    for (const [path, logged] of [
      [`/zz/${SECRET}`, "/zz/[redacted]"],
      // No encoder escapes "-", a client may: the probe's path.
      ["/zz/adminkey%2DSECRETVALUE%2D0123456789", "/zz/[redacted]"],
      [`/zz/${escapedAll}/more%20text`, "/zz/[redacted]/more text"],
      // A stray or malformed escape elsewhere neither throws nor keeps the secret in.
      ["/zz/100%/%E0%A4/adminkey%2DSECRETVALUE%2D0123456789", "/zz/100%/\uFFFD/[redacted]"],
      ["/v1/tools/tg%5Flive%5Facct%5Fs3cret", "/v1/tools/tg_live_[redacted]"],
      // Nothing found: the path as sent.
      ["/api/v1/a%20b%2D", "/api/v1/a%20b%2D"],
      ["/api/v1/%zz", "/api/v1/%zz"],
    ] as const)
      expect(redactedPath(path, redact), path).toBe(logged);
  });
});

describe("a failed start written to stderr", () => {
  const config = loadConfig({
    NODE_ENV: "test",
    ADMIN_API_KEY: KEY,
    REDIS_URL: "redis://:pw1@127.0.0.1:9",
  });
  const redact = secretRedactor(secretValues(config));

  it("holds no configured secret, in its one line or in a stack", () => {
    expect(
      startupFailureText(
        new StartupError(`the store at REDIS_URL cannot be used: redis://:pw1@127.0.0.1:9`),
        redact,
      ),
    ).toBe(
      "Toolgate could not start: the store at REDIS_URL cannot be used: redis://[redacted]127.0.0.1:9\n",
    );
    const stack = startupFailureText(
      new Error(`no account for ${encodeURIComponent(KEY)}`),
      redact,
    );
    expect(stack).toMatch(/^Toolgate failed to start: Error: no account for \[redacted\]\n {4}at /);
  });
});
