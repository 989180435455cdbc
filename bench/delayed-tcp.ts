import { connect, createServer, type Socket } from "node:net";

/**
 * A loopback TCP relay that holds every chunk `delayMs` before passing it on, both ways: a
 * server that far away (for the bench, Redis in another zone). Chunks keep their order (timers
 * of one duration fire in the order they were set). Answers the port it listens on.
 */
export async function startDelayedTcp(
  target: { host: string; port: number },
  delayMs: number,
): Promise<{ port: number; stop(): Promise<void> }> {
  const open = new Set<Socket>();
  const later = (to: Socket) => (chunk: Buffer) =>
    void setTimeout(() => {
      if (!to.destroyed) to.write(chunk);
    }, delayMs);
  const server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    for (const s of [client, upstream]) {
      open.add(s);
      s.on("close", () => open.delete(s));
      s.on("error", () => {});
    }
    client.on("data", later(upstream));
    upstream.on("data", later(client));
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}
