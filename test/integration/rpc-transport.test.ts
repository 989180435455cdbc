import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { createPublicClient, type PublicClient } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anvilAccount, startLocalChain } from "../../chain-fixtures/chain.js";
import { batchingHttp } from "../../src/payments/rpc-transport.js";
import { startRpcProxy } from "../helpers/rpc-proxy.js";

/**
 * The chain clients' transport (src/payments/rpc-transport.ts): requests made together leave as
 * one JSON-RPC batch, a request made alone leaves alone, and each request gets its own answer —
 * matched by id, whatever order the node answers in, and refused alone when only it failed.
 */
let chain: Awaited<ReturnType<typeof startLocalChain>>;
let proxy: Awaited<ReturnType<typeof startRpcProxy>>;
beforeAll(async () => {
  chain = await startLocalChain({ chainId: 84532, usdcName: "USDC", usdcVersion: "2" });
  proxy = await startRpcProxy(chain.rpcUrl);
}, 60_000);
afterAll(async () => {
  await proxy?.stop();
  await chain?.stop();
});

const addressOf = (i: number) => `0x${(i + 1).toString(16).padStart(40, "0")}` as const;
const clientOf = (url: string, batchSize = 100) =>
  createPublicClient({
    transport: batchingHttp(url, { timeout: 5_000, batchSize }),
  }) as PublicClient;

/**
 * A JSON-RPC node written for one test: `answer` gets the parsed body and returns what is sent
 * back (a string is sent as it is). Over HTTPS with the test CA's certificate when `tls`.
 */
async function scriptedNode(
  answer: (body: unknown) => unknown,
  options: { tls?: boolean } = {},
): Promise<{ url: string; server: Server; connections: () => number }> {
  let connections = 0;
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    let text = "";
    req.on("data", (chunk) => (text += chunk));
    req.on("end", () => {
      const reply = answer(JSON.parse(text));
      res.setHeader("content-type", "application/json");
      res.end(typeof reply === "string" ? reply : JSON.stringify(reply));
    });
  };
  const dir = process.env.TEST_TLS_DIR!;
  const server = (
    options.tls
      ? createHttpsServer(
          {
            key: readFileSync(join(dir, "server.key")),
            cert: readFileSync(join(dir, "server.pem")),
          },
          handler,
        )
      : createServer(handler)
  ) as Server;
  server.on("connection", () => connections++);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `${options.tls ? "https://localhost" : "http://127.0.0.1"}:${port}`,
    server,
    connections: () => connections,
  };
}

describe("the chain clients' JSON-RPC transport", () => {
  it("sends the reads a caller starts together as one batch, and a read made alone as a plain request", async () => {
    const client = clientOf(proxy.url);
    proxy.resetCounts();
    const [block, balance, code] = await Promise.all([
      client.getBlockNumber({ cacheTime: 0 }),
      client.getBalance({ address: chain.usdc }),
      client.getCode({ address: chain.usdc }),
    ]);
    expect(block).toBeGreaterThanOrEqual(0n);
    expect(balance).toBe(0n);
    expect(code?.length).toBeGreaterThan(2);
    expect(proxy.counts.roundTrips).toBe(1);
    expect(proxy.counts.calls).toBe(3);

    proxy.resetCounts();
    expect(await client.getChainId()).toBe(84532);
    expect(proxy.counts).toMatchObject({ roundTrips: 1, calls: 1 });
  });

  it("sends a sync send (answered only once its block is mined) alone, never holding up the reads made beside it", async () => {
    const client = clientOf(proxy.url);
    const relayer = anvilAccount(9);
    const signed = await relayer.signTransaction({
      chainId: 84532,
      type: "eip1559",
      to: relayer.address,
      value: 0n,
      nonce: await client.getTransactionCount({ address: relayer.address, blockTag: "pending" }),
      gas: 21_000n,
      maxFeePerGas: 10n ** 10n,
      maxPriorityFeePerGas: 10n ** 9n,
    });
    proxy.resetCounts();
    const [receipt] = await Promise.all([
      client.sendRawTransactionSync({ serializedTransaction: signed }),
      client.getBalance({ address: addressOf(1) }),
      client.getBalance({ address: addressOf(2) }),
    ]);
    expect(receipt.status).toBe("success");
    expect(proxy.counts.trips.map((methods) => methods.join(",")).sort()).toEqual([
      "eth_getBalance,eth_getBalance",
      "eth_sendRawTransactionSync",
    ]);
  });

  it.each([
    {
      case: "splits a batch larger than its batch size into several",
      batchSize: 2,
      reads: 5,
      trips: 3,
    },
    { case: "with batch size 0, sends every request alone", batchSize: 0, reads: 3, trips: 3 },
  ])("$case", async ({ batchSize, reads, trips }) => {
    const client = clientOf(proxy.url, batchSize);
    proxy.resetCounts();
    await Promise.all(
      Array.from({ length: reads }, (_, i) => client.getBalance({ address: addressOf(i) })),
    );
    expect(proxy.counts).toMatchObject({ roundTrips: trips, calls: reads });
  });

  it("refuses only the request that failed inside a batch; the others get their answers", async () => {
    const client = clientOf(proxy.url);
    const [block, failed] = await Promise.allSettled([
      client.getBlockNumber({ cacheTime: 0 }),
      client.request({ method: "eth_no_such_method" as "eth_chainId" }),
    ]);
    expect(block.status).toBe("fulfilled");
    expect(failed.status).toBe("rejected");
    expect(String((failed as PromiseRejectedResult).reason)).toMatch(
      /eth_no_such_method|not (found|supported|available)/i,
    );
  });

  it("matches answers to requests by id when the node answers a batch out of order", async () => {
    const node = await scriptedNode((body) =>
      (body as { id: number; params: [string] }[])
        .map((call) => ({ jsonrpc: "2.0", id: call.id, result: `0x${call.params[0]!.slice(-2)}` }))
        .reverse(),
    );
    const client = clientOf(node.url);
    const ask = (n: string) =>
      client.request({ method: "eth_getBalance", params: [`0x${"0".repeat(38)}${n}`, "latest"] });
    expect(await Promise.all([ask("01"), ask("02"), ask("03")])).toEqual(["0x01", "0x02", "0x03"]);
    node.server.close();
  });

  it("refuses every request of a batch the node refuses as a whole, with the node's error", async () => {
    const node = await scriptedNode(() => ({
      jsonrpc: "2.0",
      id: null,
      error: { code: -32600, message: "batch requests are not supported" },
    }));
    const client = clientOf(node.url);
    const results = await Promise.allSettled([
      client.getChainId(),
      client.getBlockNumber({ cacheTime: 0 }),
    ]);
    for (const result of results) {
      expect(result.status).toBe("rejected");
      expect((result as PromiseRejectedResult).reason.details).toBe(
        "batch requests are not supported",
      );
    }
    node.server.close();
  });

  it("refuses every request of a batch whose answer leaves some out (none is guessed)", async () => {
    const node = await scriptedNode((body) => {
      const [first] = body as { id: number }[];
      return [{ jsonrpc: "2.0", id: first!.id, result: "0x1" }];
    });
    const client = clientOf(node.url);
    const results = await Promise.allSettled([
      client.request({ method: "eth_chainId" }),
      client.request({ method: "eth_blockNumber" }),
    ]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(String((results[1] as PromiseRejectedResult).reason)).toContain("Expected 2 responses");
    node.server.close();
  });

  it("refuses a request whose reply the batch answer does not carry (answers under other ids)", async () => {
    const node = await scriptedNode((body) =>
      (body as { id: number }[]).map((call) => ({
        jsonrpc: "2.0",
        id: call.id + 1_000_000,
        result: "0x1",
      })),
    );
    const client = clientOf(node.url);
    const results = await Promise.allSettled([
      client.request({ method: "eth_chainId" }),
      client.request({ method: "eth_blockNumber" }),
    ]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect((results[0] as PromiseRejectedResult).reason.details).toBe(
      "the RPC's answer has no reply to this request",
    );
    node.server.close();
  });

  it("speaks to an HTTPS node, reusing its connection from one request to the next", async () => {
    const node = await scriptedNode(
      (body) => ({ jsonrpc: "2.0", id: (body as { id: number }).id, result: "0x14a34" }),
      { tls: true },
    );
    const client = clientOf(node.url);
    for (let i = 0; i < 5; i++) expect(await client.getChainId()).toBe(84532);
    expect(node.connections()).toBe(1);
    node.server.close();
  });

  it("refuses an answer larger than 10 MiB instead of reading it all", async () => {
    const huge = JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      result: `0x${"0".repeat(11 * 1024 * 1024)}`,
    });
    const node = await scriptedNode(() => huge);
    const client = clientOf(node.url);
    await expect(client.getChainId()).rejects.toThrow(/larger than 10485760 bytes/);
    node.server.close();
  });

  it("refuses every request of a batch whose node does not answer", async () => {
    const client = clientOf("http://127.0.0.1:9");
    const results = await Promise.allSettled([
      client.getChainId(),
      client.getBlockNumber({ cacheTime: 0 }),
    ]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
  });
});
