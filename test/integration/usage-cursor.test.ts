import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, call, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";

/**
 * A page cursor the list never handed out is a client error (400 `invalid_cursor`, naming the
 * parameter), on both stores: never a 500 from Redis, never a silent restart from the top.
 */
describe.each(["redis", "memory"] as const)("paging with a cursor, %s store", (store) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ store });
  });
  afterAll(() => gw.stop());

  // An empty cursor is a cursor like any other, as an empty limit, kind or time is a value like
  // any other (422): only leaving the parameter out starts from the top.
  it.each(["", "garbage", "1-2-3", "0x10-1", "99999999999999999999-99999999999999999999"])(
    "answers the usage cursor %j with 400 invalid_cursor",
    async (cursor) => {
      const { key } = await fundedAccount(gw.url, 100);
      const res = await call(`${gw.url}/api/v1/usage?cursor=${encodeURIComponent(cursor)}`, {
        key,
      });
      expect([res.status, res.body.error?.code, res.body.error?.param]).toEqual([
        400,
        "invalid_cursor",
        "cursor",
      ]);
    },
  );

  // An empty filter matches nothing: an empty page would read as "no usage of that tool".
  it.each(["tool", "key"])(
    "answers an empty usage filter %s= with 422 naming it",
    async (param) => {
      const { key } = await fundedAccount(gw.url, 100);
      const res = await call(`${gw.url}/api/v1/usage?${param}=`, { key });
      expect([res.status, res.body.error?.code, res.body.error?.param]).toEqual([
        422,
        "validation_failed",
        param,
      ]);
    },
  );

  it.each(["/api/v1/events?cursor=", "/api/v1/events?cursor=garbage"])(
    "answers %s with 400 invalid_cursor",
    async (path) => {
      const { key } = await fundedAccount(gw.url, 100);
      const res = await call(`${gw.url}${path}`, { key });
      expect([res.status, res.body.error?.code, res.body.error?.param]).toEqual([
        400,
        "invalid_cursor",
        "cursor",
      ]);
    },
  );

  it("pages on from a cursor it handed out", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    const first = await call(`${gw.url}/api/v1/usage?limit=1`, { key });
    const next = await call(`${gw.url}/api/v1/usage?limit=1&cursor=${first.body.next_cursor}`, {
      key,
    });
    expect(next.status).toBe(200);
    expect(next.body.data.map((e: { reason: string }) => e.reason)).toEqual(["sign-up grant"]);
  });

  it.each(["acct_doesnotexist0000", ""])(
    "answers the accounts cursor %j with 400 invalid_cursor",
    async (cursor) => {
      const res = await admin(gw.url, `/accounts?cursor=${cursor}`);
      expect([res.status, res.body.error?.code, res.body.error?.param]).toEqual([
        400,
        "invalid_cursor",
        "cursor",
      ]);
    },
  );
});
