import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";

/**
 * What the JSON body parser every route shares (http/json-body.ts) takes as text: UTF-8, however
 * the charset is spelt ("utf-8" or "utf8").
 */
let gw: TestGateway;
let key: string;
beforeAll(async () => {
  gw = await startGateway({ store: "memory" });
  ({ key } = await fundedAccount(gw.url, 1000));
}, 60_000);
afterAll(() => gw?.stop());

const LANE = "application/json"; // the keyed lane takes this one (tools/routes/keyed-lane.ts)

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
