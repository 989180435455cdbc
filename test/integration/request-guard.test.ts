import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, spawnService, type GatewayProcess } from "../helpers/gateway.js";

/**
 * The request guard in a real process (test/helpers/faults/guarded-server.ts): an exception
 * nobody caught fails the request that raised it — 500 in the error shape, or a closed
 * connection once the answer had started — and the process serves on. Outside any request it
 * still ends the process. (Charged calls: one-request-cannot-crash-the-gateway.test.ts.)
 */
let server: GatewayProcess;
beforeAll(async () => {
  server = await spawnService("test/helpers/faults/guarded-server.ts", "listening", {});
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

describe("an uncaught exception while serving a request", () => {
  it.each([["/throws-in-a-timer"], ["/forgets-a-rejected-promise"]])(
    "%s: that request is answered 500 internal_error, the process serves on",
    async (path) => {
      const res = await call(`${server.url}${path}`);
      expect(res.status).toBe(500);
      expect(res.body.error).toMatchObject({
        type: "api_error",
        code: "internal_error",
        request_id: res.headers.get("x-request-id"),
      });
      expect((await call(`${server.url}/ok`)).body).toEqual({ ok: true });
    },
  );

  it("after the answer started: that connection is closed, the process serves on", async () => {
    await expect(
      fetch(`${server.url}/throws-after-answering`).then((r) => r.text()),
    ).rejects.toThrow();
    expect((await call(`${server.url}/ok`)).body).toEqual({ ok: true });
  });

  it("outside any request: the process ends, saying why", async () => {
    let stderr = "";
    server.child.stderr!.on("data", (d) => (stderr += d));
    server.child.kill("SIGUSR2");
    const [code] = await once(server.child, "exit");
    expect(code).toBe(1);
    expect(stderr).toContain("thrown outside any request");
  });
});
