import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./ports.js";

/** The shipped load balancer's configuration, as the container mounts it. */
export const SHIPPED_HAPROXY_CFG = readFileSync(
  new URL("../../deploy/haproxy.cfg", import.meta.url),
  "utf8",
);

/** Whether a real HAProxy is installed here (Debian: apt-get install -y haproxy; CI installs it). */
export const haproxyInstalled = spawnSync("haproxy", ["-v"], { stdio: "ignore" }).status === 0;

/** The shipped file with its two replicas replaced by one at `address` (host:port). */
export const withOneReplica = (cfg: string, address: string) =>
  cfg
    .replace(/^\s*server gateway2 .*\n/m, "")
    .replace(/^(\s*server gateway1 )\S+/m, `$1${address}`);

/**
 * deploy/haproxy.cfg run by a real HAProxy, less what only the container has: its port, Docker's
 * DNS server, and the open files its maxconn needs (compose's ulimits; this machine's limit may
 * be lower). `adapt` changes it further for one test's needs. Resolves once it answers.
 */
export async function runHaproxy(adapt: (cfg: string) => string = (cfg) => cfg) {
  const dir = mkdtempSync(join(tmpdir(), "toolgate-haproxy-"));
  const port = await freePort();
  const local = adapt(
    SHIPPED_HAPROXY_CFG.replace(/^(\s*bind )\S+$/m, `$1127.0.0.1:${port}`)
      .replace(/^(\s*maxconn )\d+$/m, "$11000")
      .replace("127.0.0.11:53", "127.0.0.1:9"),
  );
  writeFileSync(join(dir, "haproxy.cfg"), local);
  const child = spawn("haproxy", ["-db", "-f", join(dir, "haproxy.cfg")], { stdio: "ignore" });
  const stop = () => {
    child.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  };
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    // /metrics is answered by HAProxy itself (404), so waiting sends the replicas nothing.
    const up = await fetch(`${url}/metrics`).then(
      () => true,
      () => false,
    );
    if (up) break;
    if (i > 100) {
      stop();
      throw new Error("HAProxy did not start");
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url, stop };
}
