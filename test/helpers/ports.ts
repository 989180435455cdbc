import { createServer } from "node:net";

/**
 * A TCP port free right now on 127.0.0.1, for a server that must know its own address before it
 * starts (a gateway whose PUBLIC_BASE_URL is registered elsewhere first, as an SSO redirect URI).
 */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = createServer()
      .once("error", reject)
      .listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
  });
