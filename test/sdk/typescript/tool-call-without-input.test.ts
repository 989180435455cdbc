import { afterEach, describe, expect, it } from "vitest";
import { Toolgate } from "../../../sdk/typescript/src/index.js";
import { CALLED, scriptedServer } from "./scripted-server.js";

/**
 * A tool called with no input sends `{}`, as Python's `tools.call(name)` does: the gateway
 * refuses a call with no body (422 "expected object, received undefined").
 */
let server: Awaited<ReturnType<typeof scriptedServer>> | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("a tool called with no input", () => {
  it.each([
    ["no input", undefined],
    ["null", null],
  ])("(%s) is sent as an empty JSON object", async (_, input) => {
    server = await scriptedServer(() => CALLED);
    const client = new Toolgate({ apiKey: "tg_test_key", baseUrl: server.url });
    const call = client.tools.call as (name: string, input?: unknown) => Promise<unknown>;
    await expect(call.call(client.tools, "some-tool", input)).resolves.toEqual({ digest: "abc" });
    expect(server.received[0]!.body).toBe("{}");
    expect(server.received[0]!.headers["content-type"]).toBe("application/json");
    await client.tools.call("some-tool");
    expect(server.received[1]!.body).toBe("{}");
  });
});
