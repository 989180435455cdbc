import { execFile } from "node:child_process";
import { createHmac } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { TOOLS } from "../../../src/tools/catalogue/index.js";
import { hostBun } from "../../../scripts/build-cli.js";
import { fundedAccount, startGateway, type TestGateway } from "../../helpers/gateway.js";

/**
 * The library's core in a real browser (Debian's Chromium, headless): bundled for the browser
 * target by Bun, loaded as an ES module from a page on another origin than the gateway's, it lists
 * tools, calls one with a key, and verifies a webhook signature with Web Crypto.
 */
const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
let gw: TestGateway;
let dir: string;
let page: Server;
let pageUrl: string;

const PAGE = `<!doctype html><html><body><pre id="out">pending</pre><script type="module">
import { Toolgate, ToolgateError, verifyWebhook } from "./toolgate.js";
const q = new URLSearchParams(location.search);
const out = document.getElementById("out");
try {
  const client = new Toolgate({ apiKey: q.get("key"), baseUrl: q.get("gateway") });
  const tools = await client.tools.list();
  const hash = await client.tools.call("hash", { text: "hello world" });
  const invalid = await client.tools.call("hash", { text: 5 }).catch((e) => e instanceof ToolgateError && [e.status, e.code, e.param]);
  const event = await verifyWebhook(q.get("body"), { "x-webhook-signature": q.get("sig") }, q.get("secret"));
  const tampered = await verifyWebhook(q.get("body") + " ", { "x-webhook-signature": q.get("sig") }, q.get("secret")).catch((e) => e.code);
  out.textContent = JSON.stringify({ tools: tools.length, digest: hash.digest, invalid, event: event.id, tampered });
} catch (e) {
  out.textContent = "failed: " + e;
}
</script></body></html>`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "toolgate-browser-"));
  await run(hostBun(), [
    "build",
    join(ROOT, "sdk/typescript/src/index.ts"),
    "--target=browser",
    "--format=esm",
    `--outfile=${join(dir, "toolgate.js")}`,
  ]);
  gw = await startGateway({ store: "memory" });
  page = createServer(async (req, res) => {
    const path = new URL(req.url!, "http://x").pathname;
    if (path === "/toolgate.js") {
      res.writeHead(200, { "content-type": "text/javascript" });
      return res.end(await readFile(join(dir, "toolgate.js")));
    }
    res.writeHead(200, { "content-type": "text/html" });
    res.end(PAGE);
  });
  await new Promise<void>((r) => page.listen(0, "127.0.0.1", r));
  pageUrl = `http://localhost:${(page.address() as { port: number }).port}/`;
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  page?.close();
  await rm(dir, { recursive: true, force: true });
});

it("the bundled core runs in Chromium: lists tools, calls one, maps an error, verifies a webhook", async () => {
  const bundle = await readFile(join(dir, "toolgate.js"), "utf8");
  expect(bundle).not.toMatch(/from\s*["']node:/);
  const { key } = await fundedAccount(gw.url, 100, "free");
  const secret = "whsec_dGVzdCBzZWNyZXQgZm9yIHRoZSBicm93c2VyIHRlc3Q=";
  const body = JSON.stringify({
    id: "evt_browser",
    event: "webhook.test",
    timestamp: new Date().toISOString(),
    data: {},
  });
  const sig = `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
  const url = `${pageUrl}?${new URLSearchParams({ key, gateway: gw.url, secret, body, sig })}`;
  const { stdout } = await run(
    "/usr/bin/chromium",
    [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      `--user-data-dir=${join(dir, "profile")}`,
      "--virtual-time-budget=20000",
      "--dump-dom",
      url,
    ],
    { timeout: 60_000, maxBuffer: 8 << 20 },
  );
  const text = /<pre id="out">([\s\S]*?)<\/pre>/.exec(stdout)?.[1] ?? stdout;
  expect(JSON.parse(text.replace(/&quot;/g, '"'))).toEqual({
    tools: TOOLS.length,
    digest: "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9",
    invalid: [422, "validation_failed", "text"],
    event: "evt_browser",
    tampered: "webhook_signature_invalid",
  });
}, 90_000);
