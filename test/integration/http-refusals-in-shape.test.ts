import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { balanceOf, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";

/**
 * Requests Node's HTTP server answers by itself unless told otherwise — no Host header, an
 * Expect it cannot meet, CONNECT — are answered in the one error shape with a request id, as
 * every other refusal is (http/client-errors.ts), and nothing is served or charged.
 */
let gw: TestGateway;
let key: string;
beforeAll(async () => {
  gw = await startGateway({ store: "memory" });
  ({ key } = await fundedAccount(gw.url, 100));
}, 60_000);
afterAll(() => gw?.stop());

/** Sends `text` on a fresh connection and reads until the server closes it (or 3 s pass). */
function exchange(text: string): Promise<string> {
  const { hostname, port } = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = "";
    const timer = setTimeout(() => socket.destroy(), 3000);
    socket.on("data", (chunk) => (received += chunk.toString("latin1")));
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(received);
    });
    socket.on("error", reject);
    socket.write(text);
  });
}

function parse(raw: string) {
  const [head = "", body = ""] = raw.split("\r\n\r\n");
  const [statusLine = "", ...lines] = head.split("\r\n");
  const headers = Object.fromEntries(
    lines.map((l) => [
      l.slice(0, l.indexOf(":")).toLowerCase(),
      l.slice(l.indexOf(":") + 1).trim(),
    ]),
  );
  return {
    status: Number(statusLine.split(" ")[1]),
    headers,
    body: body ? JSON.parse(body) : null,
  };
}

function expectShape(raw: string, status: number, code: string) {
  const res = parse(raw);
  expect([res.status, res.body?.error?.code]).toEqual([status, code]);
  expect(res.body.error).toMatchObject({
    type: "invalid_request_error",
    message: expect.any(String),
    request_id: expect.stringMatching(/^req_/),
  });
  expect(res.headers["x-request-id"]).toBe(res.body.error.request_id);
  return res;
}

describe("requests Node's server would answer bare", () => {
  it("an HTTP/1.1 request without a Host header: 400 bad_request in the shape, on the keyed lane's path too, uncharged", async () => {
    const before = await balanceOf(gw.url, key);
    expectShape(
      await exchange("GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n"),
      400,
      "bad_request",
    );
    const body = JSON.stringify({ text: "x" });
    expectShape(
      await exchange(
        `POST /v1/tools/hash HTTP/1.1\r\nx-api-key: ${key}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
      ),
      400,
      "bad_request",
    );
    expect(await balanceOf(gw.url, key)).toBe(before);
    // HTTP/1.0 has no Host requirement (RFC 9112 §3.2 is HTTP/1.1's).
    expect(parse(await exchange("GET /healthz HTTP/1.0\r\n\r\n")).status).toBe(200);
  });

  it("an Expect other than 100-continue: 417 expectation_failed in the shape, uncharged", async () => {
    const before = await balanceOf(gw.url, key);
    expectShape(
      await exchange(
        "GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nConnection: close\r\n\r\n",
      ),
      417,
      "expectation_failed",
    );
    expectShape(
      await exchange(
        `POST /v1/tools/hash HTTP/1.1\r\nHost: x\r\nx-api-key: ${key}\r\ncontent-type: application/json\r\nExpect: 200-ok\r\ncontent-length: 12\r\nConnection: close\r\n\r\n`,
      ),
      417,
      "expectation_failed",
    );
    expect(await balanceOf(gw.url, key)).toBe(before);
  });

  it("CONNECT: 405 method_not_allowed in the shape, then the connection is closed", async () => {
    const res = expectShape(
      await exchange("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"),
      405,
      "method_not_allowed",
    );
    expect(res.headers.allow).toBe("");
    expect(res.headers.connection).toBe("close");
  });
});
