import { fork } from "node:child_process";
import { once } from "node:events";
import { describe, expect, it } from "vitest";

/**
 * A gateway and the children it supervises (bundled tool workers, the local chain) under the
 * signals a process group gets as a whole — systemd's KillMode=control-group, `timeout`, Ctrl-C
 * in a terminal — and at the edges of their lives. Real processes throughout.
 */
const within = <T>(promise: Promise<T>, ms: number, what: string) =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms),
    ),
  ]);

describe("bundled workers whose gateway is gone before they are ready", () => {
  it("leave quietly: no unhandled 'error' (EPIPE, ERR_IPC_CHANNEL_CLOSED) from telling it they are ready", async () => {
    const child = fork(new URL("../../src/workers/main.ts", import.meta.url).pathname, [], {
      execArgv: ["--import", "tsx"],
      env: { PATH: process.env.PATH, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "silent" },
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    let stderr = "";
    child.stderr!.on("data", (d) => (stderr += d));
    const exited = once(child, "exit");
    // The channel closes long before the workers can listen (loading them takes a second):
    // as when the gateway is stopped during its start-up.
    child.disconnect();
    try {
      const [code, signal] = await within(exited, 20_000, "the workers' exit");
      expect(stderr).toBe("");
      expect({ code, signal }).toEqual({ code: 0, signal: null });
    } finally {
      child.kill("SIGKILL");
    }
  }, 30_000);
});
