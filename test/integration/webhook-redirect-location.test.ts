import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { SHOWN_LOCATION_CHARS, attempt, createDeliveryAgent } from "../../src/webhooks/deliver.js";

/**
 * A redirect is not followed, and the delivery log says where it pointed: clipped, since the
 * receiver chooses the Location (8,000 characters of it on every attempt of every logged delivery
 * was kept whole).
 */
let server: Server;
beforeAll(async () => {
  const dir = process.env.TEST_TLS_DIR!;
  server = createServer(
    { key: readFileSync(join(dir, "server.key")), cert: readFileSync(join(dir, "server.pem")) },
    (req, res) => {
      const location = req.url === "/long" ? `https://elsewhere.example/${"z".repeat(8000)}` : "/b";
      res.writeHead(302, { location });
      res.end();
    },
  );
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
});
afterAll(() => server.close());

const deliver = (path: string) =>
  attempt(
    createDeliveryAgent(true),
    `https://localhost:${(server.address() as { port: number }).port}${path}`,
    {},
    "{}",
  );

it("keeps a short Location whole and clips a long one", async () => {
  expect((await deliver("/short")).error).toBe("HTTP 302 (redirect to /b not followed)");
  const long = await deliver("/long");
  const shown = `https://elsewhere.example/${"z".repeat(8000)}`.slice(0, SHOWN_LOCATION_CHARS);
  expect(long).toMatchObject({
    status: 302,
    error: `HTTP 302 (redirect to ${shown}… not followed)`,
  });
});
