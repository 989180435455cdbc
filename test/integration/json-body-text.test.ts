import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  balanceOf,
  call,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";

/**
 * What the JSON body parser every route shares (http/json-body.ts) takes as text: UTF-8, however
 * the charset is spelt ("utf-8" or "utf8"), and strings that are Unicode — a `\u` escape of a lone
 * surrogate is refused, as bytes that are not UTF-8 are, rather than read as U+FFFD.
 */
let gw: TestGateway;
let key: string;
beforeAll(async () => {
  gw = await startGateway({ store: "memory" });
  ({ key } = await fundedAccount(gw.url, 1000));
}, 60_000);
afterAll(() => gw?.stop());

const LANE = "application/json"; // the keyed lane takes this one (tools/routes/keyed-lane.ts)
const EXPRESS = "application/json; charset=utf-8"; // express's route takes this one

const hash = (contentType: string, rawBody: string) =>
  call(`${gw.url}/v1/tools/hash`, { key, rawBody, headers: { "content-type": contentType } });

describe("the charset of a JSON body", () => {
  it('reads "utf8" in any case as UTF-8, as "utf-8" is', async () => {
    const body = JSON.stringify({ text: "héllo ✓" });
    const expected = (await hash(LANE, body)).body.digest;
    expect(expected).toMatch(/^[0-9a-f]{64}$/);
    for (const contentType of [
      "application/json; charset=utf8",
      "application/json; charset=UTF8",
      "application/json;charset=Utf8",
      'application/json; charset="utf8"',
      "application/json; charset=utf8; foo=bar",
    ]) {
      const res = await hash(contentType, body);
      expect([contentType, res.status, res.body.digest]).toEqual([contentType, 200, expected]);
    }
  });

  it("still refuses every other charset: 415 unsupported_media_type in the one shape", async () => {
    for (const contentType of [
      "application/json; charset=latin1",
      "application/json; charset=utf-16",
      "application/json; charset=utf8x",
      "application/json; charset=xutf8",
    ]) {
      const res = await hash(contentType, JSON.stringify({ text: "x" }));
      expect([contentType, res.status, res.body.error?.code]).toEqual([
        contentType,
        415,
        "unsupported_media_type",
      ]);
      expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"));
    }
  });
});

describe("a string escaped into a lone surrogate", () => {
  it("is refused 422 validation_failed naming the field, on the keyed lane and through express, uncharged", async () => {
    const before = await balanceOf(gw.url, key);
    for (const [body, param] of [
      [String.raw`{"text":"\ud800"}`, "text"],
      [String.raw`{"text":"a\uDFFFb"}`, "text"],
      [String.raw`{"text":"\udc00\ud800"}`, "text"], // a pair in the wrong order
      [String.raw`{"text":"ok","\ud83d":1}`, "\ud83d"], // in a key
      [String.raw`{"text":"\\\ud800"}`, "text"], // an escaped backslash, then the escape
      [String.raw`{"text":"x","options":[1,{"a":"\ud800"}]}`, "options.1.a"],
    ] as const) {
      for (const contentType of [LANE, EXPRESS]) {
        const res = await hash(contentType, body);
        const error = res.body.error;
        expect([body, contentType, res.status, error?.code, error?.param]).toEqual([
          body,
          contentType,
          422,
          "validation_failed",
          param,
        ]);
        expect(error.message).toMatch(/lone surrogate \(\\u[0-9a-f]{4}\)/);
        expect(error.request_id).toBe(res.headers.get("x-request-id"));
      }
    }
    expect(await balanceOf(gw.url, key)).toBe(before);
  });

  it("leaves valid escapes alone: a surrogate pair, an escaped backslash before 'u'", async () => {
    for (const [body, text] of [
      [String.raw`{"text":"\ud83d\ude00"}`, "😀"],
      [String.raw`{"text":"\\ud800"}`, "\\ud800"],
      [String.raw`{"text":"\u00e9"}`, "é"],
    ] as const) {
      const direct = await hash(LANE, JSON.stringify({ text }));
      for (const contentType of [LANE, EXPRESS]) {
        const res = await hash(contentType, body);
        expect([body, res.status, res.body.digest]).toEqual([body, 200, direct.body.digest]);
      }
    }
  });

  it("is refused on the MCP door too, as a JSON-RPC invalid request", async () => {
    const res = await fetch(`${gw.url}/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "x-api-key": key,
      },
      body: String.raw`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hash","arguments":{"text":"\ud800"}}}`,
    });
    const body = (await res.json()) as { error?: { code: number; message: string } };
    expect([res.status, body.error?.code]).toEqual([422, -32600]);
    expect(body.error?.message).toMatch(/lone surrogate/);
  });
});
