import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type RequestListener } from "node:http";
import { createServer as createTlsServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadWorkerConfig } from "../../src/workers/config.js";
import { startWorkers } from "../../src/workers/main.js";
import {
  admin,
  balanceOf,
  call,
  callTool,
  eventsOf,
  fundedAccount,
  signUp,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";
import { callToolOverMcp } from "../helpers/mcp.js";
import { watchRedisCommands } from "../helpers/redis.js";
import { startToolEndpoint } from "../helpers/tool-endpoint.js";

/**
 * Dedicated workers (Business): two real worker servers — the shared pools and one account's own
 * pool — each counting the tool calls that reach it. A bound account's calls (REST and MCP, light
 * and heavy tools) reach only its pool; another account's reach only the shared one; unbinding
 * restores the shared pool; a dedicated pool that is down fails the call, refunded, and never
 * falls back to the shared pools.
 */
type Workers = Awaited<ReturnType<typeof startWorkers>> & { url: string; calls: string[] };

async function countingWorkers(): Promise<Workers> {
  const workers = await startWorkers(
    loadWorkerConfig({ PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "silent" }),
  );
  const calls: string[] = [];
  workers.server.on("request", (req: IncomingMessage) => {
    if (req.method === "POST" && req.url?.startsWith("/tools/"))
      calls.push(req.url.slice("/tools/".length));
  });
  return Object.assign(workers, { url: `http://127.0.0.1:${workers.port}`, calls });
}

let shared: Workers;
let dedicated: Workers;
/** The endpoint of an account's custom tool and of an operator's tool (TOOLS_FILE), plain HTTP on loopback. */
let endpoint: Awaited<ReturnType<typeof startToolEndpoint>>;
let gw: TestGateway;
beforeAll(async () => {
  [shared, dedicated, endpoint] = await Promise.all([
    countingWorkers(),
    countingWorkers(),
    startToolEndpoint("http"),
  ]);
  endpoint.handle("/echo", (body) => ({ json: { echo: body.text } }));
  const file = join(mkdtempSync(join(tmpdir(), "toolgate-tools-file-")), "tools.yaml");
  writeFileSync(
    file,
    [
      "tools:",
      "  - name: operator-echo",
      "    description: Echoes a text, at the operator's upstream API.",
      `    url: ${endpoint.url("/echo")}`,
      "    input_schema: { type: object, properties: { text: { type: string } }, required: [text] }",
      "    output_schema: { type: object, properties: { echo: { type: string } }, required: [echo] }",
      "    price_credits: 2",
    ].join("\n"),
  );
  gw = await startGateway({
    env: {
      WORKERS_URL: shared.url,
      DEDICATED_WORKERS_ALLOW_PRIVATE_TARGETS: "1",
      UPSTREAM_ALLOW_PRIVATE_TARGETS: "1",
      TOOLS_FILE: file,
      // The slow pool's case: a deadline the test can outlast quickly (no other case calls it).
      TOOL_TIMEOUTS: "id-generate=600",
    },
  });
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  await shared?.stop();
  await dedicated?.stop();
  await endpoint?.stop();
});

/** Calls made since `mark()`, at each pool. */
function mark() {
  const at = { shared: shared.calls.length, dedicated: dedicated.calls.length };
  return () => ({
    shared: shared.calls.slice(at.shared),
    dedicated: dedicated.calls.slice(at.dedicated),
  });
}

const mcpCall = (key: string, name: string, args: unknown) =>
  callToolOverMcp(gw.url, key, name, args);

describe("binding an account to its own worker pool", () => {
  it("sends every call of the bound account to its pool only, others' to the shared pool, and unbinding restores the shared pool", async () => {
    const bound = await fundedAccount(gw.url, 1000, "business");
    const other = await fundedAccount(gw.url, 1000, "business");
    const put = await admin(gw.url, `/accounts/${bound.accountId}/workers`, {
      method: "PUT",
      body: { url: `${dedicated.url}/` },
    });
    expect([put.status, put.body]).toEqual([
      200,
      { account_id: bound.accountId, url: dedicated.url, active: true },
    ]);
    expect((await admin(gw.url, `/accounts/${bound.accountId}/workers`)).body).toEqual({
      account_id: bound.accountId,
      url: dedicated.url,
      active: true,
    });

    let since = mark();
    const onItsPool = await callTool(gw.url, bound.key, "hash", { text: "dedicated" });
    expect(onItsPool.status).toBe(200);
    // Its own pool's time is the tool's in Server-Timing, as the shared pools' is.
    expect(onItsPool.headers.get("server-timing")).toMatch(/^tool;dur=[\d.]+, gateway;dur=[\d.]+$/);
    expect((await callTool(gw.url, bound.key, "js-sandbox", { code: "6 * 7" })).body.result).toBe(
      42,
    ); // the heavy pool too
    expect(
      JSON.parse((await mcpCall(bound.key, "hash", { text: "over mcp" })).content[0]!.text).digest,
    ).toHaveLength(64);
    expect(since()).toEqual({ shared: [], dedicated: ["hash", "js-sandbox", "hash"] });

    since = mark();
    expect((await callTool(gw.url, other.key, "hash", { text: "shared" })).status).toBe(200);
    expect((await callTool(gw.url, other.key, "js-sandbox", { code: "1" })).status).toBe(200);
    expect(since()).toEqual({ shared: ["hash", "js-sandbox"], dedicated: [] });

    const del = await admin(gw.url, `/accounts/${bound.accountId}/workers`, { method: "DELETE" });
    expect([del.status, del.body]).toEqual([
      200,
      { account_id: bound.accountId, url: null, active: false },
    ]);
    // Deleting twice: the repeat is 404, as it is for an account that was never bound.
    for (const accountId of [bound.accountId, other.accountId]) {
      const again = await admin(gw.url, `/accounts/${accountId}/workers`, { method: "DELETE" });
      expect([again.status, again.body.error?.code]).toEqual([404, "not_found"]);
    }
    since = mark();
    expect((await callTool(gw.url, bound.key, "hash", { text: "back to shared" })).status).toBe(
      200,
    );
    expect(since()).toEqual({ shared: ["hash"], dedicated: [] });
    const sandboxPrice = (await call(`${gw.url}/v1/tools/js-sandbox`)).body.price.credits as number;
    expect(await balanceOf(gw.url, bound.key)).toBe(1000 - 4 - sandboxPrice + 1); // charged as usual, wherever served
  });

  it("answers two DELETEs at once as it answers two in turn: one 200, one 404", async () => {
    const { accountId } = await fundedAccount(gw.url, 100, "business");
    for (let round = 0; round < 5; round++) {
      const put = await admin(gw.url, `/accounts/${accountId}/workers`, {
        method: "PUT",
        body: { url: dedicated.url },
      });
      expect(put.status).toBe(200);
      const answers = await Promise.all(
        [0, 1].map(() => admin(gw.url, `/accounts/${accountId}/workers`, { method: "DELETE" })),
      );
      expect(answers.map((a) => a.status).sort(), `round ${round}`).toEqual([200, 404]);
    }
  });

  it("follows the tier: a bound account moved off Business uses the shared pools until it is Business again", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100, "business");
    await admin(gw.url, `/accounts/${accountId}/workers`, {
      method: "PUT",
      body: { url: dedicated.url },
    });
    await admin(gw.url, `/accounts/${accountId}/tier`, { method: "PUT", body: { tier: "pro" } });
    expect((await admin(gw.url, `/accounts/${accountId}/workers`)).body).toMatchObject({
      url: dedicated.url,
      active: false,
    });
    let since = mark();
    await callTool(gw.url, key, "hash", { text: "pro" });
    expect(since()).toEqual({ shared: ["hash"], dedicated: [] });
    await admin(gw.url, `/accounts/${accountId}/tier`, {
      method: "PUT",
      body: { tier: "business" },
    });
    since = mark();
    await callTool(gw.url, key, "hash", { text: "business" });
    expect(since()).toEqual({ shared: [], dedicated: ["hash"] });
  });

  it("binds Business accounts only (403 feature_not_in_tier), and refuses a URL the SSRF guard blocks", async () => {
    const pro = await fundedAccount(gw.url, 100, "pro");
    const refused = await admin(gw.url, `/accounts/${pro.accountId}/workers`, {
      method: "PUT",
      body: { url: dedicated.url },
    });
    expect([refused.status, refused.body.error.code, refused.body.error.required_tier]).toEqual([
      403,
      "feature_not_in_tier",
      "business",
    ]);
    const free = await signUp(gw.url);
    expect(
      (
        await admin(gw.url, `/accounts/${free.accountId}/workers`, {
          method: "PUT",
          body: { url: dedicated.url },
        })
      ).status,
    ).toBe(403);

    const { accountId } = await fundedAccount(gw.url, 100, "business");
    const bind = (url: string) =>
      admin(gw.url, `/accounts/${accountId}/workers`, { method: "PUT", body: { url } });
    // Cloud metadata stays refused even with the development setting that opens loopback.
    for (const url of [
      "http://169.254.169.254",
      "ftp://127.0.0.1",
      "http://user:pw@127.0.0.1:1",
      "http://127.0.0.1:0", // port 0: the calls would go to port 80
      `${dedicated.url}/tools`,
      "not a url",
    ]) {
      const res = await bind(url);
      expect([url, res.status, res.body.error.code, res.body.error.param]).toEqual([
        url,
        422,
        "validation_failed",
        "url",
      ]);
    }
    expect(
      (
        await admin(gw.url, `/accounts/acc_nothing/workers`, {
          method: "PUT",
          body: { url: dedicated.url },
        })
      ).status,
    ).toBe(404);
    expect((await call401(`/accounts/${accountId}/workers`)).status).toBe(401);
  });
});

describe("an account bound to its own pool, calling a custom or operator tool", () => {
  it("calls the tool's own endpoint over REST and MCP, never the pool: the pool serves the catalogue's tools only", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100, "business");
    await admin(gw.url, `/accounts/${accountId}/workers`, {
      method: "PUT",
      body: { url: dedicated.url },
    });
    const registered = await call(`${gw.url}/api/v1/custom-tools`, {
      key,
      body: {
        name: "own-echo",
        description: "Echoes a text, at the account's own endpoint.",
        url: endpoint.url("/echo"),
        input_schema: { type: "object", properties: { text: { type: "string" } } },
        output_schema: { type: "object", properties: { echo: { type: "string" } } },
        price_credits: 3,
      },
    });
    expect(registered.status).toBe(201);
    const since = mark();
    const received = endpoint.at("/echo").length;
    for (const name of ["own-echo", "operator-echo"]) {
      const rest = await callTool(gw.url, key, name, { text: `${name} rest` });
      expect([name, rest.status, rest.body]).toEqual([name, 200, { echo: `${name} rest` }]);
      const mcp = await mcpCall(key, name, { text: `${name} mcp` });
      expect([name, mcp.isError, JSON.parse(mcp.content[0]!.text)]).toEqual([
        name,
        undefined,
        { echo: `${name} mcp` },
      ]);
    }
    // The custom tool's input went to its endpoint only, not to the pool's host.
    expect(since()).toEqual({ shared: [], dedicated: [] });
    expect(
      endpoint
        .at("/echo")
        .slice(received)
        .map((r) => (r.body as { text: string }).text),
    ).toEqual(["own-echo rest", "own-echo mcp", "operator-echo rest", "operator-echo mcp"]);
    expect(await balanceOf(gw.url, key)).toBe(100 - 2 * 3 - 2 * 2);
    // The catalogue's tools still go to the pool.
    expect((await callTool(gw.url, key, "hash", { text: "pool" })).status).toBe(200);
    expect(since().dedicated).toEqual(["hash"]);
  });
});

describe("a pool reached over HTTPS", () => {
  it("sends the calls over TLS to a pool whose certificate the gateway trusts", async () => {
    // The dedicated workers' own application, served over HTTPS with the test CA's certificate for localhost.
    const dir = process.env.TEST_TLS_DIR!;
    const calls: string[] = [];
    const tls = createTlsServer(
      { key: readFileSync(join(dir, "server.key")), cert: readFileSync(join(dir, "server.pem")) },
      (req, res) => {
        if (req.method === "POST") calls.push(req.url!);
        (dedicated.server.listeners("request")[0] as RequestListener)(req, res);
      },
    );
    await new Promise<void>((r) => tls.listen(0, "127.0.0.1", r));
    try {
      const { key, accountId } = await fundedAccount(gw.url, 100, "business");
      const url = `https://localhost:${(tls.address() as { port: number }).port}`;
      expect(
        (await admin(gw.url, `/accounts/${accountId}/workers`, { method: "PUT", body: { url } }))
          .body.url,
      ).toBe(url);
      const since = mark();
      expect((await callTool(gw.url, key, "hash", { text: "over tls" })).status).toBe(200);
      expect([calls, since().shared]).toEqual([["/tools/hash"], []]);
    } finally {
      tls.closeAllConnections();
      await new Promise((r) => tls.close(r));
    }
  });
});

describe("the hot path", () => {
  it("routes a bound account's keyed call in the one Redis round trip of its admission (observed with MONITOR)", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100, "business");
    await admin(gw.url, `/accounts/${accountId}/workers`, {
      method: "PUT",
      body: { url: dedicated.url },
    });
    expect((await callTool(gw.url, key, "hash", { text: "warm-up" })).status).toBe(200);
    while ((await gw.services.store.readOutbox(accountId, 10)).length > 0)
      await new Promise((r) => setTimeout(r, 50));
    const fromGateway: string[] = [];
    const watch = await watchRedisCommands((args, source) => {
      if (source !== "lua" && args.some((a) => a.includes(`{${accountId}}`)))
        fromGateway.push(args[0]!.toLowerCase());
    });
    try {
      await new Promise((r) => setTimeout(r, 100));
      const since = mark();
      for (let i = 0; i < 5; i++)
        expect((await callTool(gw.url, key, "hash", { text: `t${i}` })).status).toBe(200);
      await new Promise((r) => setTimeout(r, 200));
      expect(since().dedicated).toHaveLength(5);
      expect(fromGateway).toEqual(Array(5).fill("evalsha"));
    } finally {
      watch.stop();
    }
  });
});

describe("a dedicated pool that is down", () => {
  it("fails the call 503, refunded, and never falls back to the shared pools", async () => {
    const spare = await countingWorkers();
    const { key, accountId } = await fundedAccount(gw.url, 100, "business");
    await admin(gw.url, `/accounts/${accountId}/workers`, {
      method: "PUT",
      body: { url: spare.url },
    });
    expect((await callTool(gw.url, key, "hash", { text: "up" })).status).toBe(200);
    await spare.stop();

    const since = mark();
    const res = await callTool(gw.url, key, "hash", { text: "down" });
    expect([res.status, res.body.error.code]).toEqual([503, "worker_unavailable"]);
    const mcp = await mcpCall(key, "hash", { text: "down" });
    expect([mcp.isError, mcp.content[0]!.text]).toEqual([
      true,
      expect.stringContaining("worker_unavailable"),
    ]);
    expect(await balanceOf(gw.url, key)).toBe(99); // only the call that was served
    expect(since().shared).toEqual([]);
  });
});

describe("a dedicated pool that sends its answer a little at a time", () => {
  it("is cut off at the tool's timeout, over REST and MCP: 504 tool_timeout, refunded", async () => {
    // Headers at once, then a byte every 100 ms for 3 s: never idle, always late.
    const slow = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"values":["');
      const drip = setInterval(() => res.write("x"), 100);
      setTimeout(() => {
        clearInterval(drip);
        res.end('"]}');
      }, 3000);
      res.on("close", () => clearInterval(drip));
    });
    await new Promise<void>((r) => slow.listen(0, "127.0.0.1", r));
    try {
      const { key, accountId } = await fundedAccount(gw.url, 100, "business");
      const url = `http://127.0.0.1:${(slow.address() as { port: number }).port}`;
      await admin(gw.url, `/accounts/${accountId}/workers`, { method: "PUT", body: { url } });
      const started = Date.now();
      const [rest, mcp] = await Promise.all([
        callTool(gw.url, key, "id-generate", { kind: "ulid" }),
        mcpCall(key, "id-generate", { kind: "ulid" }),
      ]);
      expect(Date.now() - started).toBeLessThan(2500);
      expect([rest.status, rest.body.error.code]).toEqual([504, "tool_timeout"]);
      expect([mcp.isError, mcp.content[0]!.text]).toEqual([
        true,
        expect.stringContaining("tool_timeout"),
      ]);
      expect(await balanceOf(gw.url, key)).toBe(100);
    } finally {
      slow.closeAllConnections();
      await new Promise((r) => slow.close(r));
    }
  });
});

describe("a dedicated pool whose answer is not a JSON object, or nests too deep", () => {
  it("fails the call over REST and MCP alike: 502 tool_failed, refunded, tool.error", async () => {
    // The customer's own server: 200 with text, an empty 204, a bare array, JSON null.
    const answers: Record<string, [number, string]> = {
      text: [200, "all good"],
      empty: [204, ""],
      array: [200, "[1,2]"],
      null: [200, "null"],
      // A JSON object 5,000 levels deep: MCP answered it an empty 200, charged.
      deep: [200, `{"digest":${"[".repeat(5000)}${"]".repeat(5000)}}`],
    };
    const odd = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        const [status, text] = answers[JSON.parse(body).text as string]!;
        res.writeHead(status, { "content-type": "application/json" });
        res.end(text);
      });
    });
    await new Promise<void>((r) => odd.listen(0, "127.0.0.1", r));
    try {
      const { key, accountId } = await fundedAccount(gw.url, 100, "business");
      const url = `http://127.0.0.1:${(odd.address() as { port: number }).port}`;
      await admin(gw.url, `/accounts/${accountId}/workers`, { method: "PUT", body: { url } });
      for (const text of Object.keys(answers)) {
        const rest = await callTool(gw.url, key, "hash", { text });
        expect([text, rest.status, rest.body.error?.code]).toEqual([text, 502, "tool_failed"]);
        expect(rest.body.error.message).toMatch(
          /^The hash tool failed; its answer (is not (JSON|a JSON object)|nests deeper than 64 levels)/,
        );
        // Before: MCP kept the charge, then failed to parse the answer (internal_error).
        const mcp = await mcpCall(key, "hash", { text });
        expect([text, mcp.isError, mcp.content[0]!.text]).toEqual([
          text,
          true,
          expect.stringContaining("tool_failed"),
        ]);
      }
      expect(await balanceOf(gw.url, key)).toBe(100);
      let errors: Awaited<ReturnType<typeof eventsOf>> = [];
      for (let waited = 0; errors.length < 10 && waited < 5000; waited += 50) {
        errors = (await eventsOf(gw.services.store, accountId, 0)).filter(
          (e) => e.event === "tool.error",
        );
        if (errors.length < 10) await new Promise((r) => setTimeout(r, 50));
      }
      expect(errors).toHaveLength(10);
      expect(errors.every((e) => e.data.credits_charged === 0)).toBe(true);
    } finally {
      odd.closeAllConnections();
      await new Promise((r) => odd.close(r));
    }
  });
});

describe("a pool bound while private targets were allowed", () => {
  it("is refused at connect time once they are not, IP-literal host included: 503, refunded, nothing reaches it", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100, "business");
    await admin(gw.url, `/accounts/${accountId}/workers`, {
      method: "PUT",
      body: { url: dedicated.url }, // http://127.0.0.1:…, an IP literal no DNS lookup sees
    });
    // The same store, served by a gateway with the production setting (as after a restart).
    const strict = await startGateway({ prefix: gw.prefix, env: { WORKERS_URL: shared.url } });
    try {
      const since = mark();
      const res = await callTool(strict.url, key, "hash", { text: "literal" });
      expect([res.status, res.body.error?.code]).toEqual([503, "worker_unavailable"]);
      expect(await balanceOf(strict.url, key)).toBe(100);
      expect(since()).toEqual({ shared: [], dedicated: [] });
    } finally {
      await strict.stop();
    }
  });
});

const call401 = (path: string) =>
  fetch(`${gw.url}/api/v1/admin${path}`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ url: "http://127.0.0.1:1" }),
  });
