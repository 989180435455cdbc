import { createServer, type Socket } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DELIVERY_TIMEOUT_MS, attempt, createDeliveryAgent } from "../../src/webhooks/deliver.js";

/**
 * A delivery attempt has one deadline, the specification's 10 s, from the connection to the
 * answer: a receiver that takes the connection and never finishes the TLS handshake, or sends its
 * status line a byte at a time, is given up on then (a socket idle timer let either run on).
 */
const sockets: Socket[] = [];
let silent: ReturnType<typeof createServer>;
let trickle: ReturnType<typeof createServer>;
const port = (s: ReturnType<typeof createServer>) => (s.address() as { port: number }).port;
beforeAll(async () => {
  silent = createServer((socket) => void sockets.push(socket)); // takes the connection, says nothing
  // Plain bytes, one every 3 s: no complete TLS record header before 15 s, but never idle for 10 s either.
  trickle = createServer((socket) => {
    sockets.push(socket);
    const timer = setInterval(() => socket.write("H"), 3_000);
    socket.on("close", () => clearInterval(timer));
    socket.on("error", () => clearInterval(timer));
  });
  await Promise.all(
    [silent, trickle].map((s) => new Promise<void>((r) => s.listen(0, "127.0.0.1", r))),
  );
});
afterAll(() => {
  for (const s of sockets) s.destroy();
  silent.close();
  trickle.close();
});

it.each([
  ["takes the connection and never answers the TLS handshake", () => port(silent)],
  ["keeps the connection busy a byte at a time", () => port(trickle)],
])(
  "gives up on a receiver that %s after 10 s",
  async (_what, portOf) => {
    const result = await attempt(
      createDeliveryAgent(true),
      `https://127.0.0.1:${portOf()}/hook`,
      {},
      "{}",
    );
    expect(result.status).toBeNull();
    expect(result.error).toBe("no answer within 10 s");
    expect(result.durationMs).toBeGreaterThanOrEqual(DELIVERY_TIMEOUT_MS - 50);
    expect(result.durationMs).toBeLessThan(DELIVERY_TIMEOUT_MS + 2_000);
  },
  20_000,
);
