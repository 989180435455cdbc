/**
 * Receives Toolgate webhooks and verifies each before trusting it. Run:
 *   TOOLGATE_WEBHOOK_SECRET=whsec_… TLS_CERT=cert.pem TLS_KEY=key.pem PORT=8443 npx tsx webhook-receiver.ts
 * Webhook URLs must be HTTPS, so the receiver serves TLS (or sits behind a proxy that does:
 * leave TLS_CERT unset to serve plain HTTP there). It answers 401 to anything whose signature or
 * timestamp does not verify, and 200 (once per event id) to the rest.
 */
import { readFileSync } from "node:fs";
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { ToolgateError, verifyWebhook } from "toolgate";

const secret = process.env.TOOLGATE_WEBHOOK_SECRET;
if (!secret)
  throw new Error("Set TOOLGATE_WEBHOOK_SECRET to the secret the registration returned.");
const seen = new Set<string>(); // use your database in production: deliveries are at least once

async function handle(req: IncomingMessage, res: ServerResponse) {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  try {
    // The raw bytes, before any JSON parsing: the signature is over them.
    const event = await verifyWebhook(Buffer.concat(chunks), req.headers, secret!, {
      toleranceSeconds: 300,
    });
    if (!seen.has(event.id)) {
      seen.add(event.id);
      console.log(`verified ${event.event} ${event.id}`);
    }
    res.writeHead(200).end();
  } catch (error) {
    if (!(error instanceof ToolgateError)) throw error;
    console.log(`refused: ${error.code}`);
    res.writeHead(401).end();
  }
}

const server = process.env.TLS_CERT
  ? createHttpsServer(
      { cert: readFileSync(process.env.TLS_CERT), key: readFileSync(process.env.TLS_KEY!) },
      handle,
    )
  : createHttpServer(handle);
server.listen(Number(process.env.PORT ?? 8443), process.env.HOST ?? "127.0.0.1", () => {
  console.log(`listening on ${(server.address() as { port: number }).port}`);
});
