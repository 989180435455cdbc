import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ERRORS } from "../../src/http/errors.js";
import {
  SHIPPED_HAPROXY_CFG as shipped,
  haproxyInstalled as haproxy,
  runHaproxy,
  withOneReplica,
} from "../helpers/haproxy.js";

/**
 * The shipped load balancer's configuration (deploy/haproxy.cfg), run by a real HAProxy where one
 * is installed (Debian: apt-get install -y haproxy): valid while the replicas' names do not
 * resolve (a replica not yet created must not stop it), and its own answers — the 404 for
 * /metrics, the 503 with no replica ready — in the API's one JSON error shape.
 */
const root = new URL("../..", import.meta.url).pathname;

/** The error a load balancer's answer carries, checked against the API's table of errors. */
function errorOf(status: number, body: string) {
  const { error } = JSON.parse(body) as { error: { type: string; code: keyof typeof ERRORS } };
  expect(ERRORS[error.code]).toEqual({ status, type: error.type });
  return error.code;
}

describe.skipIf(!haproxy)("deploy/haproxy.cfg run by HAProxy", () => {
  let url: string;
  let stop: () => void;
  beforeAll(async () => {
    ({ url, stop } = await runHaproxy());
  });
  afterAll(() => stop?.());

  it("is valid while the replicas' names do not resolve: their servers start down", () => {
    const check = spawnSync("haproxy", ["-c", "-f", join(root, "deploy/haproxy.cfg")], {
      encoding: "utf8",
    });
    expect(check.status, check.stderr).toBe(0);
    expect(check.stderr).toContain("could not resolve address 'gateway1', disabling server");
  });

  it("answers /metrics 404 in the API's error shape", async () => {
    const res = await fetch(`${url}/metrics`);
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
    const res = await fetch(`${url}/v1/tools`);
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

describe.skipIf(!haproxy)("deploy/haproxy.cfg in front of a replica that fails", () => {
  let url: string;
  let stop: () => void;
  let replica: Server;
  beforeAll(async () => {
    // A replica that is ready, crashes on /crash (its connection closed with no answer) and
    // never answers /hang; the timeouts shortened so the test waits a second, not a minute.
    replica = createServer((req, res) => {
      if (req.url === "/readyz") res.end("{}");
      else if (req.url === "/crash") req.socket.destroy();
    });
    await new Promise<void>((resolve) => replica.listen(0, "127.0.0.1", resolve));
    const { port: replicaPort } = replica.address() as AddressInfo;
    ({ url, stop } = await runHaproxy((cfg) =>
      withOneReplica(cfg, `127.0.0.1:${replicaPort}`).replace(/^(\s*timeout server ).*$/m, "$11s"),
    ));
  });
  afterAll(() => {
    stop?.();
    replica?.closeAllConnections();
    replica?.close();
  });

  it("answers a replica that closed the connection 502 replica_failed, in the API's shape", async () => {
    const res = await fetch(`${url}/crash`);
    expect([res.status, res.headers.get("content-type")]).toEqual([502, "application/json"]);
    expect(errorOf(502, await res.text())).toBe("replica_failed");
  });

  it("answers a replica that never answers 504 replica_timeout, in the API's shape", async () => {
    const res = await fetch(`${url}/hang`);
    expect([res.status, res.headers.get("content-type")]).toEqual([504, "application/json"]);
    expect(errorOf(504, await res.text())).toBe("replica_timeout");
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
