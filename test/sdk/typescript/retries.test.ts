import { randomBytes } from "node:crypto";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  balanceOf as creditsOf,
  call,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../../helpers/gateway.js";
import { installPackedSdk, type InstalledProject } from "../../helpers/sdk-package.js";
import { PAY_TO, balanceOf, startChains } from "../../helpers/x402.js";

/**
 * The retry rule (sdk/typescript/src/transport.ts, the Python library's too) with real
 * connections: the npm-packed library in a fresh project talks to a real gateway (Redis, anvil)
 * through a TCP forwarder that the test stops and starts (connection refused: nothing was sent)
 * or that cuts the caller off once the gateway has answered (the answer is lost). The script
 * counts its attempts through the client's own `fetch` option, and asks the forwarder to stop
 * or cut at the attempt it chooses, over a control endpoint, so nothing depends on timing.
 */
const PRICE = 2000n; // hash: 1 credit at $0.002 = 2,000 USDC atomic units
const payerKey = toHex(randomBytes(32));
const payer = privateKeyToAccount(payerKey);

let project: InstalledProject;
let chains: Awaited<ReturnType<typeof startChains>>;
let gw: TestGateway;
let forwarder: Awaited<ReturnType<typeof startForwarder>>;
beforeAll(async () => {
  [project, chains] = await Promise.all([installPackedSdk(), startChains([payer.address])]);
  gw = await startGateway({ env: chains.env });
  forwarder = await startForwarder(Number(new URL(gw.url).port));
}, 180_000);
afterAll(async () => {
  await forwarder?.close();
  await gw?.stop();
  await chains?.stop();
  await project?.remove();
});

/**
 * A TCP forwarder to the gateway on a fixed port, and its control endpoint: `POST /stop` closes
 * the listener (and its connections), so connecting is refused; `POST /start` listens on the same
 * port again; `POST /cut` makes the next connection lose the gateway's answer (reset instead).
 */
async function startForwarder(target: number) {
  const sockets = new Set<Socket>();
  let cutNext = false;
  let listener: Server | undefined;
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve) => {
      listener = createServer((client) => {
        const upstream = createConnection(target, "127.0.0.1");
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on("close", () => sockets.delete(s)).on("error", () => undefined);
        }
        // The cut is decided by the request's bytes, not the connection: fetch reuses connections.
        let cut = false;
        client.on("data", (chunk) => {
          if (cutNext) [cut, cutNext] = [true, false];
          upstream.write(chunk);
        });
        upstream.on("data", (chunk) => {
          if (cut) {
            client.resetAndDestroy();
            upstream.destroy();
          } else client.write(chunk);
        });
        client.on("close", () => upstream.destroy());
        upstream.on("close", () => client.destroy());
      });
      listener.listen(port, "127.0.0.1", () => {
        port = (listener!.address() as { port: number }).port;
        resolve();
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      listener!.close(() => resolve());
    });
  await listen();
  const control: HttpServer = createHttpServer(async (req, res) => {
    if (req.url === "/stop") await stop();
    else if (req.url === "/start") await listen();
    else if (req.url === "/cut") cutNext = true;
    res.end("ok");
  });
  await new Promise<void>((r) => control.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${port}`,
    control: `http://127.0.0.1:${(control.address() as { port: number }).port}`,
    close: async () => {
      await new Promise((r) => control.close(r));
      if (listener?.listening) await stop();
    },
  };
}

/**
 * The user's script: `attempts` (one entry per request the library sent, `paid` when it carried
 * an x402 payment), and `fetchThat(plan)`, a fetch for the client's `fetch` option that asks the
 * forwarder to refuse (`"refuse"`) or cut (`"cut"`) the attempt `plan(attempt)` names.
 */
const HEADER = `import { Toolgate, ToolgateError } from "toolgate";
import { privateKeyToAccount } from "viem/accounts";
const out = (v) => console.log(JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? x.toString() : x)));
const fields = (e) => e instanceof ToolgateError ? { status: e.status, code: e.code } : { notToolgateError: String(e) };
const control = (what) => fetch(process.env.CONTROL + "/" + what, { method: "POST" }).then((r) => r.text());
const attempts = [];
const fetchThat = (plan) => async (url, init) => {
  const headers = Object.fromEntries(Object.entries(init.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  const attempt = { at: Date.now(), method: init.method, paid: Boolean(headers["payment-signature"] ?? headers["x-payment"]), payment: headers["payment-signature"] ?? headers["x-payment"] ?? null, idempotencyKey: headers["idempotency-key"] ?? null };
  attempts.push(attempt);
  const fault = plan(attempt, attempts.length);
  if (fault === "refuse") {
    // The forwarder has closed this client's idle keep-alive connection too; a moment for fetch to
    // see that, so the attempt opens a new connection (refused) rather than writing to the old one.
    await control("stop");
    await new Promise((r) => setTimeout(r, 100));
    try { return await fetch(url, init); } catch (e) { attempt.error = e.cause?.code ?? e.name; attempt.failedAt = Date.now(); throw e; } finally { await control("start"); }
  }
  if (fault === "cut") await control("cut");
  try { return await fetch(url, init); } catch (e) { attempt.error = e.cause?.code ?? e.name; throw e; }
};
`;
const env = () => ({ URL: forwarder.url, CONTROL: forwarder.control });

describe("a connection refused before anything was sent", () => {
  it("is retried for every request, even one that is not idempotent: the key is created once", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const before = (await call(`${gw.url}/api/v1/keys`, { key })).body.data.length;
    const result = await project.script(
      `${HEADER}const client = new Toolgate({ apiKey: process.env.KEY, baseUrl: process.env.URL, fetch: fetchThat((_, n) => (n === 1 ? "refuse" : null)) });
const created = await client.keys.create({ name: "after a refusal" }).then((k) => k.name, fields);
out({ created, attempts });`,
      { ...env(), KEY: key },
    );
    expect(result.attempts.map((a: { error?: string }) => a.error ?? "answered")).toEqual([
      "ECONNREFUSED",
      "answered",
    ]);
    expect(result.created).toBe("after a refusal");
    expect((await call(`${gw.url}/api/v1/keys`, { key })).body.data.length).toBe(before + 1);
  });

  it("is retried at most maxRetries times, after at least half the backoff (0.5 s, 1 s), then is a network_error", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const result = await project.script(
      `${HEADER}const client = new Toolgate({ apiKey: process.env.KEY, baseUrl: process.env.URL, maxRetries: 2, fetch: fetchThat(() => "refuse") });
out({ error: await client.webhooks.test().then(() => null, fields), message: await client.webhooks.test().then(() => null, (e) => e.message), waits: attempts.slice(1, 3).map((a, i) => a.at - attempts[i].failedAt) });`,
      { ...env(), KEY: key },
    );
    expect(result.error).toEqual({ status: 0, code: "network_error" });
    // Nothing was sent: the message says the gateway was not reached, and nothing more.
    expect(result.message).toMatch(/^Could not reach http:\/\/127\.0\.0\.1:\d+: fetch failed$/);
    expect(result.waits).toHaveLength(2); // three attempts
    // As the Python library: never again at once (a half to all of 0.5 s, then of 1 s).
    expect(result.waits[0]).toBeGreaterThanOrEqual(250);
    expect(result.waits[1]).toBeGreaterThanOrEqual(500);
  });

  it("a paid call whose paid attempt is refused re-sends the same payment, and pays once", async () => {
    const before = await balanceOf(chains.base, payer.address);
    const payToBefore = await balanceOf(chains.base, PAY_TO);
    const result = await project.script(
      `${HEADER}const client = new Toolgate({
  baseUrl: process.env.URL,
  wallet: privateKeyToAccount(process.env.PAYER_KEY),
  spending: { allowedAssets: [{ network: "eip155:84532", asset: process.env.TOKEN }] },
  fetch: fetchThat((a) => (a.paid && !attempts.slice(0, -1).some((p) => p.paid) ? "refuse" : null)),
});
const r = await client.tools.callWithDetails("hash", { text: "refused, then paid once" });
out({ digest: r.output.digest, spent: client.spent, attempts });`,
      { ...env(), PAYER_KEY: payerKey, TOKEN: chains.base.usdc },
    );
    const [offer, refused, paid] = result.attempts;
    expect(result.attempts).toHaveLength(3);
    expect(offer).toMatchObject({ paid: false }); // answered 402 with the offer
    expect(refused).toMatchObject({ paid: true, error: "ECONNREFUSED" });
    expect(paid).toMatchObject({ paid: true, payment: refused.payment });
    expect(paid.idempotencyKey).toBe(offer.idempotencyKey);
    expect(result.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(result.spent).toBe(String(PRICE));
    expect(await balanceOf(chains.base, payer.address)).toBe(before - PRICE);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(payToBefore + PRICE);
  });
});

describe("a connection lost after the request was sent", () => {
  it("a paid call whose answer was lost is retried with the same payment: replayed, paid once", async () => {
    const before = await balanceOf(chains.base, payer.address);
    const result = await project.script(
      `${HEADER}const client = new Toolgate({
  baseUrl: process.env.URL,
  wallet: privateKeyToAccount(process.env.PAYER_KEY),
  spending: { allowedAssets: [{ network: "eip155:84532", asset: process.env.TOKEN }] },
  fetch: fetchThat((a) => (a.paid && !attempts.slice(0, -1).some((p) => p.paid) ? "cut" : null)),
});
const r = await client.tools.callWithDetails("hash", { text: "answer lost, paid once" });
out({ replayed: r.replayed, spent: client.spent, attempts });`,
      { ...env(), PAYER_KEY: payerKey, TOKEN: chains.base.usdc },
    );
    const [, lost, retried] = result.attempts;
    expect(result.attempts).toHaveLength(3);
    expect(lost).toMatchObject({ paid: true, error: expect.any(String) });
    expect(lost.error).not.toBe("ECONNREFUSED");
    expect(retried).toMatchObject({ paid: true, payment: lost.payment });
    expect(result.replayed).toBe(true);
    expect(result.spent).toBe(String(PRICE));
    expect(await balanceOf(chains.base, payer.address)).toBe(before - PRICE);
  });

  it("a keyed call whose answer was lost is charged once; a key creation whose answer was lost is not repeated", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const before = (await call(`${gw.url}/api/v1/keys`, { key })).body.data.length;
    const result = await project.script(
      `${HEADER}const client = new Toolgate({ apiKey: process.env.KEY, baseUrl: process.env.URL, fetch: fetchThat((_, n) => (n === 1 || n === 3 ? "cut" : null)) });
const called = await client.tools.callWithDetails("hash", { text: "lost once" });
const created = await client.keys.create({ name: "answer lost" }).then(() => null, (e) => ({ ...fields(e), message: e.message }));
out({ replayed: called.replayed, created, attempts: attempts.map((a) => a.error ?? "answered") });`,
      { ...env(), KEY: key },
    );
    expect(result.replayed).toBe(true);
    expect(await creditsOf(gw.url, key)).toBe(99);
    // The gateway ran it: the message must not say it was never reached.
    expect(result.created).toEqual({
      status: 0,
      code: "network_error",
      message: expect.stringMatching(
        /^Lost the connection to http:\/\/127\.0\.0\.1:\d+ \(fetch failed\): the request may have been received and run; check \(e\.g\. list what exists\) before retrying\.$/,
      ),
    });
    expect(result.attempts).toHaveLength(3); // the call twice, the key creation once
    expect((await call(`${gw.url}/api/v1/keys`, { key })).body.data.length).toBe(before + 1);
  });
});
