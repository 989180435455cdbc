import { createServer, type IncomingMessage, type ServerResponse } from "node:http";

/**
 * A JSON-RPC proxy in front of a real node that can stop answering: `silenceAfterNextSend()`
 * forwards the next eth_sendRawTransaction to the node (so the transaction really happens),
 * withholds its answer, and from then on answers nothing — an RPC dying mid-settlement.
 * `resume()` brings it back; `sent` resolves once that transaction has reached the node.
 */
export async function startRpcProxy(upstream: string) {
  let silent = false;
  let armed = false;
  let markSent!: () => void;
  const sent = new Promise<void>((resolve) => (markSent = resolve));
  const held: ServerResponse[] = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    if (silent) return void held.push(res);
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
