import { type Server, createServer, connect } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadWorkerConfig } from "../../src/workers/config.js";
import { startWorkers } from "../../src/workers/main.js";
import { request } from "node:http";
import { callTool, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";

/**
 * What the gateway sends its tool workers is its own request, whatever the caller's headers: seen
 * on the wire by a TCP relay between the gateway and real workers, which records every byte and
 * every connection.
 */
let workers: Awaited<ReturnType<typeof startWorkers>>;
let relay: Server;
let gw: TestGateway;
let connections = 0;
let sent = "";

beforeAll(async () => {
  workers = await startWorkers(loadWorkerConfig({ PORT: "0", LOG_LEVEL: "silent" }));
  relay = createServer((client) => {
    connections++;
    const upstream = connect(workers.port, "127.0.0.1");
    client.on("data", (d) => (sent += d.toString("latin1")));
    client.pipe(upstream).pipe(client);
    for (const s of [client, upstream]) s.on("error", () => client.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  const { port } = relay.address() as AddressInfo;
  gw = await startGateway({ store: "memory", env: { WORKERS_URL: `http://127.0.0.1:${port}` } });
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  relay?.close();
  await workers?.stop();
});

/** A tool call with the caller's own Connection header (fetch refuses to send one). */
function callWithConnection(key: string, connection: string, text: string): Promise<number> {
  const body = JSON.stringify({ text });
  return new Promise((resolve, reject) => {
    const req = request(
      `${gw.url}/v1/tools/hash`,
      {
        method: "POST",
        agent: false,
        headers: { "x-api-key": key, "content-type": "application/json", connection },
      },
      (res) => res.resume().on("end", () => resolve(res.statusCode!)),
    );
    req.on("error", reject);
    req.end(body);
  });
}

describe("the gateway's hop to its tool workers", () => {
  it("keeps its own connections to the workers: a caller's Connection header never reaches them", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    await callTool(gw.url, key, "hash", { text: "warm" }); // one connection to the workers, kept
    const [connectionsBefore, sentBefore] = [connections, sent.length];
    for (const connection of ["close", "Upgrade, HTTP2-Settings", "close, content-length"]) {
      expect(await callWithConnection(key, connection, connection)).toBe(200);
    }
    const hop = sent.slice(sentBefore);
    expect(hop.match(/POST \/tools\/hash HTTP\/1\.1\r\n/g)).toHaveLength(3);
    expect(hop).not.toMatch(/^connection: (close|upgrade)/im);
    expect(connections).toBe(connectionsBefore);
  });
});
