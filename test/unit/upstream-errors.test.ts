import { createServer, type Server } from "node:http";
import type { ValidateFunction } from "ajv";
import type { Logger } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../helpers/ports.js";
import { UpstreamCaller, type UpstreamTarget } from "../../src/tools/custom/forward.js";

/**
 * What a caller is told when a tool's endpoint cannot be reached, and what the gateway's log
 * keeps. An operator's tool (TOOLS_FILE) is called by the public: its endpoint's host (an internal
 * API) and a TLS library's text, line breaks and all, reached them in the 502's message.
 */
let plain: Server;
let plainPort: number;
let closedPort: number;
beforeAll(async () => {
  plain = createServer((_req, res) => res.end("{}"));
  await new Promise<void>((resolve) => plain.listen(0, "127.0.0.1", resolve));
  plainPort = (plain.address() as { port: number }).port;
  closedPort = await freePort();
});
afterAll(() => new Promise((resolve) => plain.close(resolve)));

type Line = { level: string; fields: Record<string, unknown>; msg: string };
function recordingLog(lines: Line[]): Logger {
  const at = (level: string) => (fields: Record<string, unknown>, msg: string) =>
    lines.push({ level, fields, msg });
  return { warn: at("warn"), info: at("info"), error: at("error") } as unknown as Logger;
}

/** The message of the 502 a call to `url` fails with, and the log lines it left. */
async function failure(url: string, ownerId: string | null, allowPrivate = true) {
  const lines: Line[] = [];
  const caller = new UpstreamCaller(
    { allowPrivate, maxResponseBytes: 1 << 20, maxDepth: 64 },
    [],
    recordingLog(lines),
  );
  const target: UpstreamTarget = {
    url,
    headers: {},
    sealedSecret: null,
    validateOutput: (() => true) as unknown as ValidateFunction,
    ownerId,
  };
  try {
    const outcome = await caller.forwarder(target)({
      origin: "",
      path: "",
      input: {},
      requestId: "req_test",
      timeoutMs: 5000,
    });
    expect(outcome).toMatchObject({ kind: "response", status: 502 });
    const body = (outcome as { body: Buffer }).body.toString("utf8");
    return { message: JSON.parse(body).error.message as string, lines };
  } finally {
    caller.close();
  }
}

describe("an endpoint that cannot be reached", () => {
  it("is told to an operator tool's callers in a few words, never its host nor a library's text; the log keeps it whole", async () => {
    const name = await failure("https://billing-api.corp-internal.invalid/v2/lookup", null);
    expect(name.message).toBe("the endpoint could not be reached (its address is not public)");
    const tls = await failure(`https://127.0.0.1:${plainPort}/x`, null);
    expect(tls.message).toBe("the endpoint could not be reached (TLS handshake failed)");
    const down = await failure(`https://127.0.0.1:${closedPort}/x`, null);
    expect(down.message).toBe("the endpoint could not be reached (connection refused)");
    // Refused at call time (the development switch is off now): the address is not named.
    const refused = await failure("https://10.1.2.3/x", null, false);
    expect(refused.message).toBe("the endpoint is not allowed (its address is not public)");

    expect(name.lines).toEqual([
      {
        level: "warn",
        msg: "a tool's endpoint could not be reached",
        fields: expect.objectContaining({
          request_id: "req_test",
          endpoint: "billing-api.corp-internal.invalid",
          reason: expect.stringContaining("billing-api.corp-internal.invalid"),
        }),
      },
    ]);
    expect(tls.lines[0]!.fields).toMatchObject({
      code: "EPROTO",
      reason: expect.stringMatching(/SSL/),
    });
    expect(refused.lines[0]!.fields).toMatchObject({ reason: "10.1.2.3 is in the private range" });
    // Never the URL's path or query: they may hold a key.
    expect(JSON.stringify(name.lines)).not.toContain("/v2/lookup");
  });

  it("is told to the account whose own endpoint it is with its host, but never a library's text with line breaks", async () => {
    const tls = await failure(`https://127.0.0.1:${plainPort}/x`, "acct_own");
    expect(tls.message).toBe("the endpoint could not be reached (TLS handshake failed)");
    expect(tls.lines).toEqual([
      expect.objectContaining({
        level: "info",
        fields: expect.objectContaining({ account_id: "acct_own", code: "EPROTO" }),
      }),
    ]);
    const refused = await failure("https://10.1.2.3/x", "acct_own", false);
    expect(refused.message).toBe("the endpoint is not allowed: 10.1.2.3 is in the private range");
    const name = await failure("https://billing-api.corp-internal.invalid/x", "acct_own");
    expect(name.message).toBe(
      "the endpoint could not be reached: refused to connect to billing-api.corp-internal.invalid: it does not resolve to a public address",
    );
  });
});
