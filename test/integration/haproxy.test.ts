import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ERRORS } from "../../src/http/errors.js";
import { freePort } from "../helpers/ports.js";

/**
 * The shipped load balancer's configuration (deploy/haproxy.cfg), run by a real HAProxy where one
 * is installed (Debian: apt-get install -y haproxy): valid while the replicas' names do not
 * resolve (a replica not yet created must not stop it), and its own answers — the 404 for
 * /metrics, the 503 with no replica ready — in the API's one JSON error shape.
 */
const root = new URL("../..", import.meta.url).pathname;
const shipped = readFileSync(join(root, "deploy/haproxy.cfg"), "utf8");
const haproxy = spawnSync("haproxy", ["-v"], { stdio: "ignore" }).status === 0;

describe.skipIf(!haproxy)("deploy/haproxy.cfg run by HAProxy", () => {
  let dir: string;
  let port: number;
  let child: ChildProcess;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "toolgate-haproxy-"));
    port = await freePort();
    // As in the container, less what only the container has: its port, Docker's DNS server, and
    // the open files its maxconn needs (compose's ulimits; this machine's limit may be lower).
    const local = shipped
      .replace(/^(\s*bind )\S+$/m, `$1127.0.0.1:${port}`)
      .replace(/^(\s*maxconn )\d+$/m, "$11000")
      .replace("127.0.0.11:53", "127.0.0.1:9");
    writeFileSync(join(dir, "haproxy.cfg"), local);
    child = spawn("haproxy", ["-db", "-f", join(dir, "haproxy.cfg")], { stdio: "ignore" });
    for (let i = 0; ; i++) {
      const up = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        () => true,
        () => false,
      );
      if (up) break;
      if (i > 100) throw new Error("HAProxy did not start");
      await new Promise((r) => setTimeout(r, 50));
    }
  });
  afterAll(() => {
    child?.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  });

  it("is valid while the replicas' names do not resolve: their servers start down", () => {
    const check = spawnSync("haproxy", ["-c", "-f", join(root, "deploy/haproxy.cfg")], {
      encoding: "utf8",
    });
    expect(check.status, check.stderr).toBe(0);
    expect(check.stderr).toContain("could not resolve address 'gateway1', disabling server");
  });

  it("answers /metrics 404 in the API's error shape", async () => {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect([res.status, res.headers.get("content-type")]).toEqual([404, "application/json"]);
    const { error } = (await res.json()) as { error: { type: string; code: string } };
    expect(error).toEqual({
      type: "invalid_request_error",
      code: "route_not_found",
      message: "No such route.",
    });
    expect(ERRORS.route_not_found).toEqual({ status: 404, type: error.type });
  });

  it("answers 503 in the API's error shape, with Retry-After, when no replica is ready", async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/tools`);
    expect([res.status, res.headers.get("content-type"), res.headers.get("retry-after")]).toEqual([
      503,
      "application/json",
      "1",
    ]);
    const { error } = (await res.json()) as { error: { type: string; code: string } };
    expect(error.code).toBe("shutting_down");
    expect(ERRORS.shutting_down).toEqual({ status: 503, type: error.type });
  });
});

describe("deploy/haproxy.cfg and its container", () => {
  const compose = parse(readFileSync(join(root, "docker-compose.yml"), "utf8"), {
    merge: true,
  }) as any;

  it("looks the replicas up through Docker's DNS while it runs, and starts without them", () => {
    expect(shipped).toMatch(/^resolvers docker\n\s+nameserver \S+ 127\.0\.0\.11:53$/m);
    expect(shipped).toMatch(/^\s*default-server init-addr last,libc,none resolvers docker$/m);
  });

  it("is given the open files its maxconn needs (two per connection)", () => {
    const maxconn = Number(/^\s*maxconn (\d+)$/m.exec(shipped)?.[1]);
    const { nofile } = compose.services.loadbalancer.ulimits;
    expect(nofile.soft).toBe(nofile.hard);
    expect(nofile.soft).toBeGreaterThan(2 * maxconn + 1000);
  });
});
