import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Ajv2020 } from "ajv/dist/2020.js";
import { verificationToken } from "../../src/accounts/email-verification.js";
import { EXAMPLE_RETRY } from "../../src/pages/docs-builder.js";
import { OPERATION_EXAMPLES } from "../../src/pages/docs-examples.js";
import { freshDatabase } from "../helpers/postgres.js";
import { exampleTools } from "../../src/pages/tool-examples.js";
import { jsonSchemasOf } from "../../src/tools/views.js";
import { startFakeLlm, startFakeSearxng } from "../helpers/fake-providers.js";
import {
  ADMIN_KEY,
  admin,
  call,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";
import { startReceiver } from "../helpers/receiver.js";
import { startToolEndpoint } from "../helpers/tool-endpoint.js";
import { startChains } from "../helpers/x402.js";

/**
 * Every curl on /docs, copied from the page as a reader would, run with bash against a real
 * gateway (Redis, workers, a local chain for x402, fake AI and search providers speaking their
 * real APIs) with the key in TOOLGATE_API_KEY. Each must answer 2xx, or the error status the
 * page says it shows.
 */
const run = promisify(execFile);
const DOCUMENTED_BASE = "http://localhost:0"; // the test gateway's PUBLIC_BASE_URL default (PORT=0)

let gw: TestGateway;
let chains: Awaited<ReturnType<typeof startChains>>;
let llm: Awaited<ReturnType<typeof startFakeLlm>>;
let searxng: Awaited<ReturnType<typeof startFakeSearxng>>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let upstream: Awaited<ReturnType<typeof startToolEndpoint>>;
let html = "";

const unescapeHtml = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");

/** Every `<pre class="curl" data-expect>` block of the page: the command and what it should answer. */
function curlBlocks(page: string): { command: string; expect: string }[] {
  return [
    ...page.matchAll(
      /<pre[^>]* class="curl" data-expect="([^"]+)"><code>([\s\S]*?)<\/code><\/pre>/g,
    ),
  ].map((m) => ({ expect: m[1]!, command: unescapeHtml(m[2]!) }));
}

beforeAll(async () => {
  [chains, llm, searxng, receiver] = await Promise.all([
    startChains([]),
    startFakeLlm(),
    startFakeSearxng([
      {
        title: "x402 — an open payment protocol",
        url: "https://x402.org/",
        content: "HTTP 402 payments.",
      },
    ]),
    startReceiver(),
  ]);
  // The operator's tools (TOOLS_FILE), at an endpoint that echoes what it was sent: one whose
  // schema has an example, one whose schema a body can be built from, one whose cannot.
  upstream = await startToolEndpoint("http");
  upstream.handle("/echo", (body) => ({ json: { echo: body } }));
  const toolsFile = join(mkdtempSync(join(tmpdir(), "toolgate-docs-tools-")), "tools.yaml");
  writeFileSync(
    toolsFile,
    JSON.stringify({
      tools: [
        {
          name: "weather-now",
          description: "The weather in a city, from the operator's upstream API.",
          url: upstream.url("/echo"),
          input_schema: {
            type: "object",
            example: { city: "Lisbon" },
            properties: { city: { type: "string", minLength: 2 } },
            required: ["city"],
            additionalProperties: false,
          },
          price_credits: 2,
        },
        {
          name: "forecast-days",
          description: "A forecast, from the operator's upstream API.",
          url: upstream.url("/echo"),
          input_schema: {
            type: "object",
            properties: {
              city: { type: "string", minLength: 2, maxLength: 5 },
              days: { type: "integer", minimum: 1, maximum: 7 },
              units: { enum: ["metric", "imperial"] },
              note: { type: "string" },
            },
            required: ["city", "days", "units"],
            additionalProperties: false,
          },
          price_credits: 2,
        },
        {
          name: "airport-code",
          description: "An airport, from the operator's upstream API.",
          url: upstream.url("/echo"),
          input_schema: {
            type: "object",
            properties: { code: { type: "string", pattern: "^[A-Z]{3}$" } },
            required: ["code"],
          },
          price_credits: 2,
        },
      ],
    }),
  );
  // ai-extract asks for JSON (response_format); the others get text.
  llm.state.reply = (req) =>
    req.response_format
      ? JSON.stringify({
          invoice_number: "2291",
          vendor: "Acme Corp",
          total: 1250,
          currency: "EUR",
        })
      : "Bonjour, comment allez-vous ?";
  gw = await startGateway({
    env: {
      ...chains.env,
      // The books: the usage and analytics examples read them.
      DATABASE_URL: await freshDatabase(),
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "1",
      UPSTREAM_ALLOW_PRIVATE_TARGETS: "1",
      SIGNUPS_PER_HOUR_PER_IP: "10000",
      STATUS_CHECK_INTERVAL_MS: "60000",
      TOOLS_FILE: toolsFile,
    },
    workerEnv: {
      AI_BASE_URL: `${llm.url}/v1`,
      AI_MODEL: "test-model",
      AI_API_KEY: "sk-test",
      SEARXNG_URL: searxng.url,
    },
  });
  await gw.services.pools.refresh();
  html = await (await fetch(`${gw.url}/docs`)).text();
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await Promise.all([chains?.stop(), llm?.stop(), searxng?.stop(), upstream?.stop()]);
});

/** A fresh Business account (Free to buy a plan) with a second key, a webhook (its own or the platform's), an incident: what the examples' variables name. */
async function variablesFor(command: string): Promise<Record<string, string>> {
  // Business, but for buying a plan: a plan below the account's tier is refused (409) before its offer.
  const account = await fundedAccount(
    gw.url,
    1000,
    command.includes("/plans/purchase") ? "free" : "business",
  );
  const second = await call(`${gw.url}/api/v1/keys`, {
    key: account.key,
    body: { name: "second" },
  });
  const platform = command.includes("/admin/webhooks");
  const register = platform
    ? await admin(gw.url, "/webhooks/register", {
        body: { url: receiver.url("/platform"), events: ["agent.registered"] },
      })
    : await call(`${gw.url}/api/v1/webhooks/register`, {
        key: account.key,
        body: { url: receiver.url("/account"), events: ["tool.error"] },
      });
  const vars: Record<string, string> = {
    TOOLGATE_API_KEY: account.key,
    TOOLGATE_ADMIN_KEY: ADMIN_KEY,
    ACCOUNT_ID: account.accountId,
    KEY_ID: second.body.id,
    WEBHOOK_ID: register.body.id,
    VERIFICATION_TOKEN: verificationToken(gw.services.config.secretKeys[0]!, account.accountId),
    CHALLENGE_MESSAGE: "not a signed challenge",
  };
  if (command.includes("$TOOL_NAME")) {
    const tool = {
      name: "word-count",
      description: "Counts words.",
      url: receiver.url("/tools/word-count"),
      input_schema: { type: "object" },
      price_credits: 1,
    };
    vars.TOOL_NAME = (
      await call(`${gw.url}/api/v1/custom-tools`, { key: account.key, body: tool })
    ).body.name;
  }
  if (command.includes("$INCIDENT_ID")) {
    vars.INCIDENT_ID = (
      await admin(gw.url, "/incidents", { body: { title: "Test", message: "Testing." } })
    ).body.id;
  }
  if (command.includes("$EVENT_ID")) {
    const path = platform ? "/admin/webhooks" : "/webhooks";
    const test = platform
      ? await admin(gw.url, "/webhooks/test", { body: { webhook_id: vars.WEBHOOK_ID } })
      : await call(`${gw.url}/api/v1/webhooks/test`, {
          key: account.key,
          body: { webhook_id: vars.WEBHOOK_ID },
        });
    expect(test.status).toBeLessThan(300);
    const deadline = Date.now() + 10_000;
    for (;;) {
      const log = platform
        ? await admin(gw.url, `${path.replace("/admin", "")}/${vars.WEBHOOK_ID}/deliveries`)
        : await call(`${gw.url}/api/v1${path}/${vars.WEBHOOK_ID}/deliveries`, { key: account.key });
      if (log.body.data?.[0]?.event_id) {
        vars.EVENT_ID = log.body.data[0].event_id;
        break;
      }
      if (Date.now() > deadline) throw new Error("no delivery logged");
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return vars;
}

/** Same keys, same JSON types, recursively (ids, times and amounts differ). */
function sameShape(actual: unknown, example: unknown, path = "$"): string[] {
  if (example === null || typeof example !== "object")
    return typeof actual === typeof example || example === null
      ? []
      : [`${path}: ${typeof actual} instead of ${typeof example}`];
  if (Array.isArray(example))
    return Array.isArray(actual)
      ? example.length && actual.length
        ? sameShape(actual[0], example[0], `${path}[0]`)
        : []
      : [`${path}: not an array`];
  if (!actual || typeof actual !== "object") return [`${path}: not an object`];
  return Object.entries(example).flatMap(([k, v]) =>
    k in actual
      ? sameShape((actual as Record<string, unknown>)[k], v, `${path}.${k}`)
      : [`${path}.${k}: missing`],
  );
}

/**
 * Tools whose worked example needs what this machine lacks: the public network (the web readers
 * fetch example.com) or a model that follows a structured answer format (the fake provider
 * answers free text). Here their example must fail cleanly: 502 tool_failed, not charged; or, for
 * a page on a name this machine's DNS does not resolve, 422 as for any name that resolves to no
 * public address.
 */
const NEEDS_OUTSIDE = new Set([
  "web-fetch",
  "web-metadata",
  "rss-read",
  "robots-check",
  "sitemap-read",
  "ai-extract-url",
  "ai-classify",
  "ai-code-review",
]);

describe("the curl examples on /docs", () => {
  it("put the key in double quotes, so the shell fills in $TOOLGATE_API_KEY", () => {
    const blocks = curlBlocks(html);
    expect(blocks.length).toBeGreaterThan(40);
    expect(html).not.toContain("x-api-key: $KEY");
    for (const { command } of blocks) {
      expect(command).not.toMatch(/'x-api-key/);
      if (command.includes("x-api-key"))
        expect(command).toMatch(/-H "x-api-key: \$TOOLGATE_(API|ADMIN)_KEY"/);
    }
  });

  it("each answers 2xx when run with bash, or the error the page says it shows", async () => {
    const failures: string[] = [];
    for (const { command, expect: expected } of curlBlocks(html)) {
      const runnable = command
        .replaceAll(DOCUMENTED_BASE, gw.url)
        .replaceAll("https://example.com/hooks/", receiver.url("/"))
        .replaceAll("https://example.com/tools/", receiver.url("/tools/"));
      const env = { PATH: process.env.PATH!, ...(await variablesFor(runnable)) };
      const { stdout } = await run("bash", ["-c", `${runnable} -w '\\n%{http_code}'`], { env });
      const status = Number(stdout.slice(stdout.lastIndexOf("\n") + 1));
      const tool = /\/v1\/tools\/([a-z0-9-]+)"/.exec(command)?.[1];
      const failsCleanly =
        tool !== undefined &&
        NEEDS_OUTSIDE.has(tool) &&
        ((status === 502 &&
          stdout.includes('"code":"tool_failed"') &&
          stdout.includes("not charged")) ||
          (status === 422 && stdout.includes("does not resolve to a public address")));
      const ok =
        expected === "2xx"
          ? (status >= 200 && status < 300) || failsCleanly
          : status === Number(expected);
      if (!ok)
        failures.push(
          `${status} (expected ${expected}): ${command.split("\n")[0]} → ${stdout.slice(0, 300)}`,
        );
      const documented = Object.entries(OPERATION_EXAMPLES).find(
        ([op, ex]) =>
          ex.response &&
          command.includes(` -X ${op.split(" ")[0]} `) &&
          command.includes(`${op.split(" ")[1]}"`),
      );
      if (documented && ok) {
        const mismatches = sameShape(
          JSON.parse(stdout.slice(0, stdout.lastIndexOf("\n"))),
          documented[1].response,
        );
        if (mismatches.length)
          failures.push(
            `${documented[0]}: the documented answer differs from the real one: ${mismatches.join(", ")}`,
          );
      }
    }
    expect(failures).toEqual([]);
  }, 300_000);

  it("show an operator's tool (TOOLS_FILE) called with an example from its input schema, promised 2xx only when the schema accepts it", async () => {
    const sectionOf = (name: string) =>
      html.match(new RegExp(`<section id="tool-${name}"[\\s\\S]*?</section>`))?.[0] ?? "";
    const shown = (name: string) => {
      const section = sectionOf(name);
      const [block] = curlBlocks(section);
      return {
        expect: block?.expect,
        body: /-d '(.*)'$/.exec(block?.command ?? "")?.[1],
        typescript: /await client\.tools\.call\("[^"]+", ([\s\S]*?)\);/.exec(
          unescapeHtml(section),
        )?.[1],
        python: /result = client\.tools\.call\("[^"]+", ([\s\S]*?)\)\n/.exec(
          unescapeHtml(section),
        )?.[1],
        provider: section.includes("AI or search provider"),
        operator: section.includes("operator&#39;s endpoint"),
      };
    };
    expect(shown("weather-now")).toEqual({
      expect: "2xx",
      body: '{"city":"Lisbon"}',
      typescript: '{\n  "city": "Lisbon"\n}',
      python: '{\n    "city": "Lisbon",\n}',
      provider: false,
      operator: true,
    });
    expect(shown("forecast-days")).toMatchObject({
      expect: "2xx",
      body: '{"city":"examp","days":1,"units":"metric"}',
      provider: false,
    });
    expect(shown("airport-code")).toMatchObject({ expect: "422", body: "{}", provider: false });
    // The catalogue's provider tools still say where their answer comes from.
    expect(sectionOf("ai-summarize")).toContain("the configured AI or search provider");
    // And each is run by the test above: the endpoint got the bodies the page shows.
    const sent = upstream.at("/echo").map((r) => JSON.stringify(r.body));
    expect(sent).toEqual(
      expect.arrayContaining(['{"city":"Lisbon"}', '{"city":"examp","days":1,"units":"metric"}']),
    );
  });

  it("show each tool's real answer to its worked example, valid against the tool's output schema", async () => {
    const ajv = new Ajv2020({ strict: false });
    const shown = exampleTools().filter((t) => !NEEDS_OUTSIDE.has(t.name));
    expect(shown.length).toBeGreaterThan(20);
    const sectionIn = (page: string, name: string) =>
      page.match(new RegExp(`<section id="tool-${name}"[\\s\\S]*?</section>`))?.[0] ?? "";
    const answerIn = (section: string) =>
      section.match(/<h4>Answer 200[^<]*<\/h4><pre[^>]*><code>([\s\S]*?)<\/code><\/pre>/)?.[1];
    // An example the first build missed (a worker slow on a loaded machine) is run again in the
    // background once its delay has passed and a view finds it due (pages/docs-builder.ts): the page
    // a later view gets has it.
    let page = html;
    for (
      let tries = 0;
      tries < 20 && shown.some((t) => !answerIn(sectionIn(page, t.name)));
      tries++
    ) {
      await new Promise((r) => setTimeout(r, tries === 0 ? EXAMPLE_RETRY.firstMs + 500 : 1000));
      page = await (await fetch(`${gw.url}/docs`)).text();
    }
    for (const tool of shown) {
      const section = sectionIn(page, tool.name);
      const answer = answerIn(section);
      expect(answer, tool.name).toBeDefined();
      const answered = JSON.parse(unescapeHtml(answer!));
      // Long strings are cut on the page; the rest is what the tool answered.
      const validate = ajv.compile(jsonSchemasOf(tool).output);
      if (!JSON.stringify(answered).includes("…"))
        expect(validate(answered), `${tool.name}: ${JSON.stringify(validate.errors)}`).toBe(true);
      expect(section).toContain(`${tool.cost} credit`);
    }
  }, 60_000);
});
