import { request } from "node:http";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anvilAccount } from "../../chain-fixtures/chain.js";
import { walletAccountId } from "../../src/payments/wallet-accounts.js";
import {
  balanceOf as creditsOf,
  call,
  callTool,
  dropPrefix,
  fundedAccount,
  spawnGateway,
  startGateway,
  uniquePrefix,
  type GatewayProcess,
  type TestGateway,
} from "../helpers/gateway.js";
import { PAY_TO, balanceOf, signAuthorization, startChains, v1Header } from "../helpers/x402.js";

/**
 * Requests that are the client's fault are answered 4xx in the one error shape — never 500, never
 * Node's bare answer, never blamed on a dependency (503) — and nothing is charged or paid.
 */
const PRICE = 2000n;
const PAYER = anvilAccount(6);
let chains: Awaited<ReturnType<typeof startChains>>;
let gw: TestGateway;
let key: string;
beforeAll(async () => {
  chains = await startChains([PAYER.address]);
  gw = await startGateway({ env: chains.env });
  ({ key } = await fundedAccount(gw.url, 100));
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  await chains?.stop();
});

function expectErrorShape(body: any, status: number, code: string, res: { status: number }) {
  expect([res.status, body?.error?.code]).toEqual([status, code]);
  expect(body.error).toMatchObject({
    type: "invalid_request_error",
    message: expect.any(String),
    request_id: expect.stringMatching(/^req_/),
  });
}

/** A raw HTTP/1.1 exchange (fetch would refuse or rewrite some of these requests). */
function rawRequest(
  path: string,
  headers: Record<string, string>,
  body?: Buffer | string,
): Promise<{ status: number; headers: Record<string, unknown>; body: any }> {
  const { hostname, port } = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: hostname, port, path, method: body === undefined ? "GET" : "POST", headers },
      (res) => {
        let text = "";
        res.on("data", (c) => (text += c));
        res.on("end", () =>
          resolve({
            status: res.statusCode!,
            headers: res.headers,
            body: text ? JSON.parse(text) : null,
          }),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

describe("client errors", () => {
  it.each(["gzip", "deflate", "br"])(
    "a body that is not %s though Content-Encoding says so is 400 invalid_content_encoding, uncharged",
    async (encoding) => {
      const before = await creditsOf(gw.url, key);
      const res = await rawRequest(
        "/v1/tools/hash",
        { "x-api-key": key, "content-type": "application/json", "content-encoding": encoding },
        '{"text":"plain"}',
      );
      expectErrorShape(res.body, 400, "invalid_content_encoding", res);
      expect(await creditsOf(gw.url, key)).toBe(before);
    },
  );

  it("a malformed percent escape in the path is 400 invalid_path", async () => {
    const res = await rawRequest(
      "/v1/tools/%E0%A4%A",
      { "x-api-key": key, "content-type": "application/json" },
      '{"text":"x"}',
    );
    expectErrorShape(res.body, 400, "invalid_path", res);
  });

  it("headers over 16 KB are 431 headers_too_large in the error shape, not Node's bare answer", async () => {
    const res = await rawRequest("/v1/tools", { "x-filler": "a".repeat(17_000) });
    expectErrorShape(res.body, 431, "headers_too_large", res);
    expect(res.headers["x-request-id"]).toBe(res.body.error.request_id);
    expect(res.headers["content-type"]).toContain("application/json");
    // The gateway goes on serving.
    expect((await call(`${gw.url}/healthz`)).status).toBe(200);
  });
});

describe("malformed x402 payments: 402 payment_invalid with the offer, nothing paid, no RPC error counted", () => {
  const rpcErrors = async () => {
    const text = await gw.services.metrics.render();
    return [...text.matchAll(/^toolgate_chain_rpc_errors_total\{[^}]*\} (\d+)/gm)].reduce(
      (sum, m) => sum + Number(m[1]),
      0,
    );
  };

  it.each([
    [
      "a 65-byte all-zero signature",
      async () => ({
        ...(await signAuthorization({ account: PAYER, chain: chains.base, value: PRICE })),
        signature: `0x${"00".repeat(65)}`,
      }),
    ],
    [
      "a validBefore of 2^256",
      async () => {
        const signed = await signAuthorization({
          account: PAYER,
          chain: chains.base,
          value: PRICE,
        });
        return {
          ...signed,
          authorization: { ...signed.authorization, validBefore: (2n ** 256n).toString() },
        };
      },
    ],
    [
      "a signature of an odd number of hex digits",
      async () => ({
        ...(await signAuthorization({ account: PAYER, chain: chains.base, value: PRICE })),
        signature: "0x123",
      }),
    ],
  ])("%s", async (_name, payload) => {
    const [paidBefore, errorsBefore] = [await balanceOf(chains.base, PAY_TO), await rpcErrors()];
    const res = await call(`${gw.url}/v1/tools/hash`, {
      method: "POST",
      body: { text: "x" },
      headers: { "x-payment": v1Header("base-sepolia", await payload()) },
    });
    expect([res.status, res.body.error.code, res.body.error.type]).toEqual([
      402,
      "payment_invalid",
      "payment_error",
    ]);
    expect(res.body.error.reason).toMatch(/signature|validBefore/);
    expect(res.body.accepts).toHaveLength(2);
    expect(await balanceOf(chains.base, PAY_TO)).toBe(paidBefore);
    expect(await gw.services.store.getAccount(walletAccountId(PAYER.address))).toBeNull();
    expect(await rpcErrors()).toBe(errorsBefore);
  });
});

/**
 * What happens on a connection below the routes — answers Node's parser gives, clients that stop
 * reading — against a real gateway process, whose log (stdout) is read as an operator would.
 */
describe("below the routes: seen in the log and metrics, and bounded", () => {
  const prefix = uniquePrefix("raw");
  let raw: GatewayProcess;
  beforeAll(async () => {
    raw = await spawnGateway(prefix, {
      HEADERS_TIMEOUT_MS: "1000",
      REQUEST_TIMEOUT_MS: "2000",
      // Above HEADERS_TIMEOUT_MS as by default: a quiet connection with half its headers gets its 408 first.
      SEND_TIMEOUT_MS: "3000",
    });
  }, 90_000);
  afterAll(async () => {
    await raw?.stop();
    await dropPrefix(prefix);
  });

  /**
   * Writes `parts` on a fresh connection, `everyMs` apart, and collects what comes back until the
   * server closes it (or `capMs` passes: `lastedMs` is then null). With `readWhen`, nothing is
   * read before it settles (a paused socket sees no close either: it is noticed once reading resumes).
   */
  function exchange(
    parts: string[],
    opts: { everyMs?: number; capMs?: number; readWhen?: Promise<unknown> } = {},
  ) {
    const { everyMs = 0, capMs = 15_000, readWhen = Promise.resolve() } = opts;
    return new Promise<{ text: string; statusLines: string[]; lastedMs: number | null }>(
      (resolve) => {
        const { port } = new URL(raw.url);
        const socket = connect(Number(port), "127.0.0.1");
        const started = Date.now();
        let text = "";
        let next = 0;
        const writeNext = () => {
          if (next < parts.length && socket.writable) socket.write(parts[next++]!);
          if (next < parts.length) timer = setTimeout(writeNext, everyMs);
        };
        let timer = setTimeout(writeNext, 0);
        socket.pause();
        void readWhen.then(() => socket.on("data", (d) => (text += d)).resume());
        const done = (lastedMs: number | null) => {
          for (const t of [timer, cap]) clearTimeout(t);
          socket.destroy();
          resolve({ text, statusLines: text.match(/HTTP\/1\.1 \d{3} [^\r]+/g) ?? [], lastedMs });
        };
        socket.on("error", () => undefined);
        socket.on("close", () => done(Date.now() - started));
        const cap = setTimeout(() => done(null), capMs);
      },
    );
  }

  /** The gateway's JSON log lines that satisfy `match`, waiting up to `waitMs` for the first. */
  async function logLines(match: (line: any) => boolean, waitMs = 5000): Promise<any[]> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const lines = raw.output.flatMap((l) => (l.startsWith("{") ? [JSON.parse(l)] : []));
      const found = lines.filter(match);
      if (found.length > 0 || Date.now() > deadline) return found;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it("a client that stops reading a large answer is cut off within SEND_TIMEOUT_MS; a slow tool call is not", async () => {
    const { key } = await fundedAccount(raw.url, 100);
    // The client waits ~4 s in silence for this answer: longer than the send timeout.
    const slow = callTool(raw.url, key, "js-sandbox", {
      code: "const s = Date.now(); while (Date.now() - s < 4000) {} 42",
      time_limit_ms: 5000,
    });
    // More answers than the kernel's socket buffers hold (~4 MB on loopback), asked at once and
    // never read: what does not fit waits in the gateway's memory.
    const page = (await fetch(`${raw.url}/docs`).then((r) => r.arrayBuffer())).byteLength;
    const asked = Math.ceil(8_000_000 / page);
    // Nothing is read until the gateway says it cut the connection off: Node reports a stall after
    // one quiet period (or two when the write had just progressed), once the answers have filled
    // the socket's buffers, which a loaded machine takes longer to do. (Reading after a fixed 8 s
    // was flaky: with both cores loaded the buffers were not full by then, and the client, once
    // reading, took every answer.)
    const cut = logLines((l) => l.reason === "stalled_reader", 40_000);
    const stalled = await exchange(Array(asked).fill("GET /docs HTTP/1.1\r\nHost: x\r\n\r\n"), {
      readWhen: cut,
      capMs: 45_000,
    });
    const [line] = await cut;
    expect(line).toMatchObject({ msg: "connection cut: the client stopped reading its answer" });
    expect(line.unsent_bytes).toBeGreaterThan(0);
    // The client finds the connection closed with answers missing.
    expect(stalled.lastedMs).not.toBeNull();
    expect(stalled.statusLines.length).toBeLessThan(asked);
    const metrics = await fetch(`${raw.url}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/^toolgate_stalled_readers_cut_total 1$/m);
    const answer = await slow;
    expect([answer.status, answer.body.result]).toEqual([200, 42]);
    // The exchange alone may take up to 45 s (its cap): room beside it.
  }, 90_000);

  it("writes no API key that appears in a request's path to the log", async () => {
    const { key } = await fundedAccount(raw.url, 100);
    const ids: string[] = [];
    for (const path of [`/v1/tools/${key}`, `/api/v1/webhooks/${key}/deliveries?x=${key}`]) {
      const res = await fetch(`${raw.url}${path}`, { headers: { "x-api-key": key } });
      ids.push(res.headers.get("x-request-id")!);
    }
    const lines = await logLines((l) => l.request_id === ids[1]);
    expect(lines.map((l) => l.path)).toEqual(["/api/v1/webhooks/tg_live_[redacted]/deliveries"]);
    expect((await logLines((l) => l.request_id === ids[0])).map((l) => l.path)).toEqual([
      "/v1/tools/tg_live_[redacted]",
    ]);
    expect(raw.output.filter((l) => l.includes(key.slice(8)))).toEqual([]);
  });

  it("counts and logs the answers Node's parser gives (400, 431, 408), one line each", async () => {
    const errors = async () => {
      const text = await fetch(`${raw.url}/metrics`).then((r) => r.text());
      return (code: string) =>
        Number(
          text.match(new RegExp(`^toolgate_errors_total\\{code="${code}"\\} (\\d+)`, "m"))?.[1] ??
            0,
        );
    };
    const before = await errors();
    const answers = await Promise.all([
      exchange(["BOGUS / HTTP/1.1\r\nHost: x\r\n\r\n"]),
      exchange([`GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`]),
      // Headers never finished: cut off after HEADERS_TIMEOUT_MS.
      exchange(["GET /healthz HTTP/1.1\r\nHost: x\r\n"]),
    ]);
    expect(answers.map((a) => a.statusLines)).toEqual([
      ["HTTP/1.1 400 Bad Request"],
      ["HTTP/1.1 431 Request Header Fields Too Large"],
      ["HTTP/1.1 408 Request Timeout"],
    ]);
    const after = await errors();
    expect(
      ["bad_request", "headers_too_large", "request_timeout"].map((c) => after(c) - before(c)),
    ).toEqual([1, 1, 1]);
    const metrics = await fetch(`${raw.url}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(
      /^toolgate_http_requests_total\{route="unparsed",method="unknown",status="408"\} [1-9]/m,
    );
    for (const [i, status] of [400, 431, 408].entries()) {
      const id = answers[i]!.text.match(/X-Request-Id: (\S+)/i)![1];
      const lines = await logLines((l) => l.request_id === id);
      expect(lines.map((l) => [l.msg, l.status])).toEqual([["request refused", status]]);
    }
  });

  it("answers a pipelined call before closing, without a word for the malformed request after it", async () => {
    const signup = await call(`${raw.url}/api/v1/signup`, {
      body: { email: `pipelined-${Date.now()}@example.com` },
    });
    const key: string = signup.body.api_key;
    const body = JSON.stringify({ text: "pipelined" });
    const answers = await Promise.all(
      [
        "GARBAGE / HTTP/1.1\r\nHost: x\r\n\r\n",
        `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`,
      ].map((next) =>
        exchange([
          `POST /v1/tools/hash HTTP/1.1\r\nHost: x\r\nx-api-key: ${key}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}${next}`,
        ]),
      ),
    );
    for (const answer of answers) {
      // The call's own answer, not the refusal of the request after it; then the connection closes.
      expect(answer.statusLines).toEqual(["HTTP/1.1 200 OK"]);
      expect(answer.text).toContain('"algorithm":"sha256"');
      expect(answer.lastedMs).not.toBeNull();
    }
    expect((await call(`${raw.url}/api/v1/account`, { key })).body.credits).toBe(23);
  });

  it("closes, without a second answer, a connection whose request was answered before its body had all arrived", async () => {
    const trickled = await exchange(
      ["GET /healthz HTTP/1.1\r\nHost: x\r\ncontent-length: 100\r\n\r\n", ...Array(40).fill("a")],
      { everyMs: 150 },
    );
    // Closed once REQUEST_TIMEOUT_MS (2 s) passed with the body still incomplete.
    expect(trickled.lastedMs).not.toBeNull();
    expect(trickled.statusLines).toEqual(["HTTP/1.1 200 OK"]);
  });
});
