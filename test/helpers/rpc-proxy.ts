import { createServer, type IncomingMessage, type ServerResponse } from "node:http";

/**
 * A JSON-RPC proxy in front of a real node that can stop answering: `silenceAfterNextSend()`
 * forwards the next eth_sendRawTransaction to the node (so the transaction really happens),
 * withholds its answer, and from then on answers nothing — an RPC dying mid-settlement.
 * `resume()` brings it back; `sent` resolves once that transaction has reached the node.
 * `maxLogRange` makes it refuse eth_getLogs over more blocks than that, as hosted RPC providers
 * do (JSON-RPC error -32005); `logQueries` counts the eth_getLogs it answered and refused.
 */
export async function startRpcProxy(upstream: string, options: { maxLogRange?: number } = {}) {
  const logQueries = { answered: 0, refused: 0 };
  const rpc = async (method: string, params: unknown[]) =>
    ((await (await fetch(upstream, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) })).json()) as { result: string }).result;
  const blockOf = async (tag: unknown) => (typeof tag === "string" && tag.startsWith("0x") ? BigInt(tag) : tag === "earliest" ? 0n : BigInt(await rpc("eth_blockNumber", [])));
  /** The refusal of an over-wide eth_getLogs, or null to pass the request on. */
  const refuseLogs = async (body: string): Promise<string | null> => {
    if (options.maxLogRange === undefined || !body.includes('"eth_getLogs"')) return null;
    const request = JSON.parse(body) as { id: unknown; params: [{ fromBlock?: unknown; toBlock?: unknown }] };
    const filter = request.params[0];
    const span = (await blockOf(filter.toBlock ?? "latest")) - (await blockOf(filter.fromBlock ?? "latest")) + 1n;
    if (span <= BigInt(options.maxLogRange)) {
      logQueries.answered++;
      return null;
    }
    logQueries.refused++;
    return JSON.stringify({ jsonrpc: "2.0", id: request.id, error: { code: -32005, message: `query exceeds max block range ${options.maxLogRange}` } });
  };
  let silent = false;
  let armed = false;
  let markSent!: () => void;
  const sent = new Promise<void>((resolve) => (markSent = resolve));
  const held: ServerResponse[] = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    if (silent) return void held.push(res);
    const refusal = await refuseLogs(body);
    if (refusal) {
      res.writeHead(200, { "content-type": "application/json" });
      return void res.end(refusal);
    }
    const isSend = body.includes('"eth_sendRawTransaction"');
    const answer = await fetch(upstream, { method: "POST", headers: { "content-type": "application/json" }, body }).then((r) => r.text());
    if (isSend && armed) {
      armed = false;
      silent = true;
      markSent();
      return void held.push(res);
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(answer);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    sent,
    logQueries,
    silenceAfterNextSend() {
      armed = true;
    },
    resume() {
      silent = false;
      for (const res of held.splice(0)) res.destroy();
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const res of held.splice(0)) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
