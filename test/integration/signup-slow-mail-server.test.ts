import { createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomId } from "../../src/lib/ids.js";
import { call, requestSignInLink, startGateway, type TestGateway } from "../helpers/gateway.js";

/**
 * A mail server that accepts connections and never says hello (overloaded, or a firewall's
 * tarpit): nodemailer waits 30 s for its greeting. Sign-up answers with the account's key at once
 * all the same — the key is shown only in that answer — and the dashboard's sign-in-link form
 * answers as fast for an address with an account as for one without. Real gateway on Redis, real
 * TCP server as the mail server.
 */
let gw: TestGateway;
let mailServer: Server;
const connections: Socket[] = [];

beforeAll(async () => {
  mailServer = createServer((socket) => {
    connections.push(socket); // held open, silent
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => mailServer.listen(0, "127.0.0.1", resolve));
  const { port } = mailServer.address() as { port: number };
  gw = await startGateway({ env: { SMTP_URL: `smtp://127.0.0.1:${port}` } });
});
afterAll(async () => {
  await gw?.stop();
  for (const socket of connections) socket.destroy();
  await new Promise((resolve) => mailServer?.close(resolve));
});

const timed = async <T>(work: () => Promise<T>) => {
  const started = Date.now();
  const result = await work();
  return { result, ms: Date.now() - started };
};

describe("a mail server that does not answer", () => {
  it("does not hold sign-up's answer: the key comes at once and works", async () => {
    const email = `slow-mail-${randomId(8)}@example.com`;
    const { result: res, ms } = await timed(() =>
      call(`${gw.url}/api/v1/signup`, {
        body: { email },
        headers: { "x-forwarded-for": `198.51.100.${Math.floor(Math.random() * 250)}` },
      }),
    );
    expect(res.status).toBe(201);
    expect(ms).toBeLessThan(3000);
    const me = await call(`${gw.url}/api/v1/account`, { key: res.body.api_key });
    expect(me.body).toMatchObject({ email, credits: 25, email_verified: false });
    // The e-mail was attempted: the mail server saw the connection.
    await expect.poll(() => connections.length).toBeGreaterThan(0);
    // Sending it again is accepted at once too (it used to wait, then answer 500).
    const again = await timed(() =>
      call(`${gw.url}/api/v1/account/verification-email`, {
        method: "POST",
        key: res.body.api_key,
      }),
    );
    expect(again.result.status).toBe(202);
    expect(again.result.body).toEqual({ sent_to: email });
    expect(again.ms).toBeLessThan(3000);
  });

  it("does not hold the sign-in-link form, for an address with an account or without", async () => {
    const email = `link-${randomId(8)}@example.com`;
    await call(`${gw.url}/api/v1/signup`, {
      body: { email },
      headers: { "x-forwarded-for": `198.51.100.${Math.floor(Math.random() * 250)}` },
    });
    const post = (to: string, client: string) => requestSignInLink(gw.url, to, client);
    const known = await timed(() => post(email, "203.0.113.1"));
    const unknown = await timed(() => post(`nobody-${randomId(8)}@example.com`, "203.0.113.2"));
    expect([known.result.status, unknown.result.status]).toEqual([200, 200]);
    expect(known.ms).toBeLessThan(3000);
    expect(unknown.ms).toBeLessThan(3000);
  });
});
