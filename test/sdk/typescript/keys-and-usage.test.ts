import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { inspect } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Toolgate, ToolgateError } from "../../../sdk/typescript/src/index.js";
import { fundedAccount, startGateway, type TestGateway } from "../../helpers/gateway.js";

/**
 * `client.keys` and `client.usage` against a real gateway: the options the Python library has
 * too (`revoke(id, force=)`, `usage.list(tool=, key=, kind=, from_=, to=)`), and an answer the
 * client cannot read, as both libraries report it.
 */
let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ store: "memory" });
});
afterAll(() => gw?.stop());

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => null,
    (e: unknown) => (e instanceof ToolgateError ? { status: e.status, code: e.code } : e),
  );

describe("client.keys.revoke", () => {
  it("keeps the account's last active key unless force is given", async () => {
    const { key, keyId } = await fundedAccount(gw.url, 100, "free");
    const client = new Toolgate({ apiKey: key, baseUrl: gw.url });
    expect(await refusal(client.keys.revoke(keyId))).toEqual({
      status: 409,
      code: "last_active_key",
    });
    expect((await client.keys.revoke(keyId, { force: true })).status).toBe("revoked");
  });
});

describe("client.usage.list", () => {
  it("filters the ledger by tool, key, kind and time", async () => {
    const { key, keyId } = await fundedAccount(gw.url, 100, "free");
    const client = new Toolgate({ apiKey: key, baseUrl: gw.url });
    const other = await client.keys.create({ name: "other" });
    await client.tools.call("hash", { text: "a" });
    await client.tools.call("qr-code", { text: "b" });
    await new Toolgate({ apiKey: other.key, baseUrl: gw.url }).tools.call("hash", { text: "c" });
    const hashes = (await client.usage.list({ tool: "hash" })).data;
    expect(hashes.map((e) => [e.tool, e.kind])).toEqual([
      ["hash", "debit"],
      ["hash", "debit"],
    ]);
    expect(
      (await client.usage.list({ tool: "hash", key: other.id })).data.map((e) => e.key_id),
    ).toEqual([other.id]);
    expect(
      new Set((await client.usage.list({ key: keyId, kind: "debit" })).data.map((e) => e.tool)),
    ).toEqual(new Set(["hash", "qr-code"]));
    expect(new Set((await client.usage.list({ kind: "grant" })).data.map((e) => e.kind))).toEqual(
      new Set(["grant"]),
    );
    expect((await client.usage.list({ from: "2999-01-01T00:00:00Z" })).data).toEqual([]);
    expect((await client.usage.list({ to: "2000-01-01T00:00:00Z" })).data).toEqual([]);
    expect((await client.usage.list({ tool: "hash", from: hashes.at(-1)!.at })).data).toHaveLength(
      2,
    );
  });
});

describe("an answer that is not JSON", () => {
  it("is invalid_response with status 0, an error raised in the client", async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    // Asking for CSV makes the gateway answer the usage page 200 as text/csv.
    const client = new Toolgate({ apiKey: key, baseUrl: gw.url, headers: { accept: "text/csv" } });
    const error = await client.usage.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolgateError);
    expect(error).toMatchObject({
      status: 0,
      code: "invalid_response",
      message: "The gateway answered 200 with a body that is not JSON.",
      requestId: expect.stringMatching(/^req_/),
    });
  });
});

describe("a redirect", () => {
  it("is not followed, so the key never reaches the address it names: invalid_response, status 0", async () => {
    const elsewhere: string[] = [];
    const other = createServer((req, res) => {
      elsewhere.push(String(req.headers["x-api-key"]));
      res.end("{}");
    }).listen(0, "127.0.0.1");
    await once(other, "listening");
    const target = `http://127.0.0.1:${(other.address() as AddressInfo).port}/v1/tools/hash`;
    const proxy = createServer((_req, res) => {
      res.writeHead(307, { location: target }).end();
    }).listen(0, "127.0.0.1");
    await once(proxy, "listening");
    try {
      const client = new Toolgate({
        apiKey: "tg_live_secret",
        baseUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
      });
      const error = await client.tools.call("hash", { text: "a" }).catch((e: unknown) => e);
      expect(error).toMatchObject({ status: 0, code: "invalid_response" });
      expect((error as ToolgateError).message).toContain(`answered 307 to ${target}`);
      expect(elsewhere).toEqual([]);
    } finally {
      proxy.close();
      other.close();
    }
  });
});

describe("a client logged or serialised", () => {
  it("does not show its API key", () => {
    const client = new Toolgate({ apiKey: "tg_live_a_secret_of_its_own", baseUrl: gw.url });
    expect(inspect(client, { depth: 10 })).not.toContain("a_secret_of_its_own");
    expect(JSON.stringify(client)).not.toContain("a_secret_of_its_own");
  });
});

describe("ids and tool names", () => {
  it('that are empty, "." or ".." are refused before any request: they would name another path', async () => {
    const { key } = await fundedAccount(gw.url, 100, "free");
    const sent: string[] = [];
    const client = new Toolgate({
      apiKey: key,
      baseUrl: gw.url,
      fetch: (url, init) => {
        sent.push(String(url));
        return fetch(url, init);
      },
    });
    for (const attempt of [
      () => client.keys.rotate(".."),
      () => client.keys.revoke("."),
      () => client.keys.update("", { name: "x" }),
      () => client.tools.get(".."),
      () => client.tools.call("..", {}),
      () => client.webhooks.resend("wh_1", ".."),
    ])
      expect(await refusal(attempt())).toEqual({ status: 0, code: "invalid_argument" });
    expect(sent).toEqual([]);
    // Anything else is one encoded segment.
    expect(await refusal(client.keys.revoke("../x"))).toEqual({ status: 404, code: "not_found" });
    expect(sent).toEqual([`${gw.url}/api/v1/keys/..%2Fx`]);
  });
});
