import type { Server } from "node:net";
import { StartupError } from "../lib/startup-error.js";

/**
 * Listens on `port` and `host`, or fails with the one line an operator can act on (a busy port,
 * one that needs privileges, a HOST that is not this machine's). The gateway's own server and the
 * primary's check before it forks (cluster.ts) say the same.
 */
export async function listen(server: Server, port: number, host: string): Promise<void> {
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE") throw new StartupError(`port ${port} is in use; set PORT`);
    if (code === "EACCES")
      throw new StartupError(`port ${port} needs privileges this process does not have; set PORT`);
    if (code === "EADDRNOTAVAIL")
      throw new StartupError(`HOST ${host} is not an address of this machine; set HOST`);
    // A host name that does not resolve fails in the listen's own lookup (getaddrinfo).
    if (code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "EAI_FAIL")
      throw new StartupError(`HOST ${host} does not resolve to an address; set HOST`);
    throw err;
  }
}
