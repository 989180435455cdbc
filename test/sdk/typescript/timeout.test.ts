import { createServer as createHttpServer } from "node:http";
import { createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installPackedSdk, type InstalledProject } from "../../helpers/sdk-package.js";

/**
 * `timeoutMs` bounds each attempt as a whole, from the npm pack tarball in a fresh project,
 * against a real HTTP server that answers a byte at a time. The Python library's `timeout` is
 * held to the same (sdk/python/tests/test_timeouts.py).
 */
let project: InstalledProject;
beforeAll(async () => {
  project = await installPackedSdk();
}, 180_000);
afterAll(async () => {
  await project?.remove();
});

/**
 * A real HTTP server that answers every request 200 with a small JSON body, a byte every 50 ms:
 * each byte comes well within any sane read timeout, the whole takes seconds. Under `/head/` the
 * status line and headers are trickled too; elsewhere they come at once and the body trickles.
 */
async function tricklingServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => undefined);
    socket.once("data", (request) => {
      const body = JSON.stringify({
        id: "acct_slow",
        tier: "free",
        credits: 1,
        padding: "x".repeat(40),
      });
      const head = `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`;
      const trickled = request.toString().startsWith("GET /head/") ? head + body : body;
      if (trickled === body) socket.write(head);
      let i = 0;
      const timer = setInterval(() => {
        if (socket.destroyed || i >= trickled.length) {
          clearInterval(timer);
          socket.end();
          return;
        }
        socket.write(trickled[i++]!);
      }, 50);
      socket.once("close", () => clearInterval(timer));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    close: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

describe("timeoutMs", () => {
  it("bounds each attempt as a whole: an answer trickled a byte at a time fails with timeout after about the timeout", async () => {
    const slow = await tricklingServer();
    try {
      const result = await project.script(
        `import { Toolgate, ToolgateError } from "toolgate";
const timed = async (client, run) => {
  const started = Date.now();
  let message = "";
  const outcome = await run(client).then(() => "answered", (e) => e instanceof ToolgateError ? ((message = e.message), e.code) : "not a ToolgateError: " + e);
  return { outcome, message, ms: Date.now() - started };
};
const client = (path, timeoutMs) => new Toolgate({ apiKey: "k", baseUrl: process.env.URL + path, timeoutMs, maxRetries: 0 });
console.log(JSON.stringify({
  body: await timed(client("/body/", 600), (c) => c.account.get()),
  head: await timed(client("/head/", 600), (c) => c.account.get()),
  perCall: await timed(client("/body/", 60_000), (c) => c.tools.call("hash", { text: "x" }, { timeoutMs: 600 })),
}));`,
        { URL: slow.url },
      );
      for (const run of [result.body, result.head, result.perCall]) {
        expect(run.outcome).toBe("timeout");
        // Sent whole, unanswered in time: it may have run, and a blind retry could run it twice.
        expect(run.message).toMatch(/within 600 ms: the request may have been received and run/);
        // About the timeout: the whole answer would take over 5 s.
        expect(run.ms).toBeGreaterThanOrEqual(550);
        expect(run.ms).toBeLessThan(2500);
      }
    } finally {
      await slow.close();
    }
  });

  it("a caller's own signal ends the request with a ToolgateError (code aborted, the reason as its cause), mid-answer or while waiting to retry", async () => {
    const slow = await tricklingServer();
    // A real server that answers every request 429 with Retry-After: 5, so the client waits to retry.
    const busy = createHttpServer((_request, response) => {
      response.writeHead(429, { "content-type": "application/json", "retry-after": "5" });
      response.end(
        JSON.stringify({
          error: { type: "rate_limit_error", code: "rate_limited", message: "slow down" },
        }),
      );
    });
    await new Promise<void>((r) => busy.listen(0, "127.0.0.1", r));
    try {
      const result = await project.script(
        `import { Toolgate, ToolgateError } from "toolgate";
const aborted = async (baseUrl, reason) => {
  const started = Date.now();
  const controller = new AbortController();
  setTimeout(() => controller.abort(reason), 400);
  const client = new Toolgate({ apiKey: "k", baseUrl, maxRetries: 2 });
  const error = await client.tools.call("hash", { text: "x" }, { signal: controller.signal }).then(() => null, (e) => e);
  return {
    isToolgateError: error instanceof ToolgateError,
    name: error?.name, code: error?.code, status: error?.status, message: error?.message,
    causeIsReason: reason === undefined ? error?.cause?.name === "AbortError" : error?.cause === reason,
    ms: Date.now() - started,
  };
};
console.log(JSON.stringify({
  midAnswer: await aborted(process.env.SLOW + "/body/", undefined),
  waitingToRetry: await aborted(process.env.BUSY, new Error("user pressed stop")),
}));`,
        { SLOW: slow.url, BUSY: `http://127.0.0.1:${(busy.address() as { port: number }).port}` },
      );
      for (const run of [result.midAnswer, result.waitingToRetry]) {
        expect(run).toMatchObject({
          isToolgateError: true,
          name: "ToolgateError",
          code: "aborted",
          status: 0,
          causeIsReason: true,
        });
        expect(run.message).toMatch(/aborted by the caller's signal/);
        // At the abort, not after the trickled answer (5 s) or the retry's wait (5 s).
        expect(run.ms).toBeLessThan(2500);
      }
      expect(result.waitingToRetry.message).toContain("user pressed stop");
    } finally {
      await slow.close();
      await new Promise<void>((r) => busy.close(() => r()));
    }
  });
});
