import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadWorkerConfig } from "../../src/workers/config.js";
import { fetchPublic } from "../../src/workers/web/fetch.js";

/**
 * Port 0 is no destination for the web tools either: Node connects to the scheme's default port
 * when given 0, so the URL a tool answered about (robots-check's `robots_url`) was not the one
 * read. Refused before any connection, as the caller's input (422, not charged), redirects too.
 */
const config = loadWorkerConfig({ LOG_LEVEL: "silent" });
const privateConfig = loadWorkerConfig({ LOG_LEVEL: "silent", WEB_ALLOW_PRIVATE_TARGETS: "1" });
let site: Server;
let siteUrl: string;
let hits = 0;

beforeAll(async () => {
  site = createServer((_req, res) => {
    hits++;
    res.writeHead(302, { location: "http://127.0.0.1:0/robots.txt" }).end();
  });
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
  siteUrl = `http://127.0.0.1:${(site.address() as { port: number }).port}`;
});
afterAll(() => new Promise((resolve) => site?.close(resolve)));

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => null,
    (err: { status?: number; code?: string; param?: string; message: string }) => ({
      status: err.status,
      code: err.code,
      param: err.param,
      message: err.message,
    }),
  );

describe("the web tools' reads", () => {
  it("refuse a URL with port 0 before connecting (no network needed)", async () => {
    for (const url of [
      "http://1.1.1.1:0/",
      "https://1.1.1.1:0/robots.txt",
      "http://[2606:4700::1111]:0/",
    ])
      expect(await refusal(fetchPublic(config, url, { timeoutMs: 5000 }))).toEqual({
        status: 422,
        code: "invalid_input",
        param: "url",
        message: `Refused to read ${new URL(url).host}: port 0 is not a port a server can listen on.`,
      });
  });

  it("refuse a redirect to port 0", async () => {
    const before = hits;
    expect(await refusal(fetchPublic(privateConfig, siteUrl, { timeoutMs: 5000 }))).toEqual({
      status: 422,
      code: "invalid_input",
      param: "url",
      message: "Refused to read 127.0.0.1:0: port 0 is not a port a server can listen on.",
    });
    expect(hits - before).toBe(1);
  });
});
