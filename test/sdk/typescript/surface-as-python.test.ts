import { readFile } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installPackedSdk, type InstalledProject } from "../../helpers/sdk-package.js";

/**
 * Where the TypeScript library's surface had drifted from the Python library's, from the npm
 * pack tarball in a fresh project, against a real HTTP server that records what it is sent.
 */
let project: InstalledProject;
let server: Server;
let url: string;
const seen: { method: string; url: string; headers: IncomingHttpHeaders; body: string }[] = [];
beforeAll(async () => {
  project = await installPackedSdk();
  server = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
    // Each answer in the shape the gateway gives it (the library checks the fields it reads).
    const sendTest = req.url === "/api/v1/webhooks/test";
    res.writeHead(sendTest ? 202 : 200, { "content-type": "application/json" });
    res.end(JSON.stringify(sendTest ? { sent: [] } : { data: [], next_cursor: null }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}, 180_000);
afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await project?.remove();
});

const HEADER = `import { Toolgate } from "toolgate";
const out = (v) => console.log(JSON.stringify(v));
`;

describe("the packed library, as the Python library", () => {
  it("says who it is in the User-Agent (toolgate-typescript/<version>, as toolgate-python/<version>); the caller's headers win", async () => {
    const version = JSON.parse(
      await readFile(new URL("../../../sdk/typescript/package.json", import.meta.url), "utf8"),
    ).version;
    seen.length = 0;
    await project.script(
      `${HEADER}await new Toolgate({ apiKey: "k", baseUrl: process.env.URL }).tools.list();
await new Toolgate({ apiKey: "k", baseUrl: process.env.URL, headers: { "user-agent": "my-agent/2" } }).tools.list();
out(null);`,
      { URL: url },
    );
    expect(seen.map((r) => r.headers["user-agent"])).toEqual([
      `toolgate-typescript/${version}`,
      "my-agent/2",
    ]);
  });

  it("reads the account's events as client.account.events (Python's name); usage.events still answers", async () => {
    seen.length = 0;
    const result = await project.script(
      `${HEADER}const client = new Toolgate({ apiKey: "k", baseUrl: process.env.URL });
out({ account: await client.account.events({ type: "credits.low", limit: 2 }), usage: await client.usage.events() });`,
      { URL: url },
    );
    expect(result).toEqual({
      account: { data: [], next_cursor: null },
      usage: { data: [], next_cursor: null },
    });
    expect(seen.map((r) => `${r.method} ${r.url}`)).toEqual([
      "GET /api/v1/events?type=credits.low&limit=2",
      "GET /api/v1/events",
    ]);
  });

  it("refuses a base URL without http(s) when the client is made, naming it, as Python's: a ToolgateError, not a bare TypeError", async () => {
    seen.length = 0;
    const result = await project.script(
      `${HEADER}const made = async (options) => {
  try { return await new Toolgate({ apiKey: "k", ...options }).tools.list(); }
  catch (e) { return [e.name, e.status, e.code, e.message]; }
};
out([await made({ baseUrl: "localhost:8402" }), await made({})]);`,
      { TOOLGATE_BASE_URL: "api.toolgate.example" },
    );
    expect(result).toEqual([
      [
        "ToolgateError",
        0,
        "invalid_argument",
        'baseUrl must be an http(s) URL such as https://toolgate.example (got "localhost:8402").',
      ],
      [
        "ToolgateError",
        0,
        "invalid_argument",
        'TOOLGATE_BASE_URL must be an http(s) URL such as https://toolgate.example (got "api.toolgate.example").',
      ],
    ]);
    expect(seen).toEqual([]);
  });

  it("takes an empty baseUrl as unset (TOOLGATE_BASE_URL, else the default), as Python's base_url", async () => {
    seen.length = 0;
    const result = await project.script(
      `${HEADER}const client = new Toolgate({ apiKey: "k", baseUrl: "" });
out({ baseUrl: client.baseUrl, tools: await client.tools.list() });`,
      { TOOLGATE_BASE_URL: url },
    );
    expect(result).toEqual({ baseUrl: url, tools: [] });
    expect(seen.map((r) => `${r.method} ${r.url}`)).toEqual(["GET /v1/tools"]);
  });

  it("tests a webhook named by its id alone (Python's webhooks.test(webhook_id)), by the body's field, or every webhook", async () => {
    seen.length = 0;
    await project.script(
      `${HEADER}const client = new Toolgate({ apiKey: "k", baseUrl: process.env.URL });
await client.webhooks.test("wh_by_id");
await client.webhooks.test({ webhook_id: "wh_by_body" });
await client.webhooks.test();
out(null);`,
      { URL: url },
    );
    expect(seen.map((r) => [`${r.method} ${r.url}`, JSON.parse(r.body)])).toEqual([
      ["POST /api/v1/webhooks/test", { webhook_id: "wh_by_id" }],
      ["POST /api/v1/webhooks/test", { webhook_id: "wh_by_body" }],
      ["POST /api/v1/webhooks/test", {}],
    ]);
  });
});
