import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ERRORS } from "../../src/http/errors.js";
import { hash } from "../../src/tools/catalogue/utilities.js";
import { loadWorkerConfig } from "../../src/workers/config.js";
import { startWorkers } from "../../src/workers/main.js";
import {
  balanceOf,
  callTool,
  dropPrefix,
  fundedAccount,
  spawnGatewayPair,
  uniquePrefix,
  type GatewayProcess,
} from "../helpers/gateway.js";
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

describe.skipIf(!haproxy)("deploy/haproxy.cfg in front of two gateways, one restarted", () => {
  // The shipped configuration and the replicas' shutdown delay as compose sets it: only the
  // replicas' addresses are changed.
  const compose = parse(readFileSync(join(root, "docker-compose.yml"), "utf8"), {
    merge: true,
  }) as any;
  const delay: string = compose.services.gateway1.environment.SHUTDOWN_DELAY_SECONDS ?? "0";
  const prefix = uniquePrefix("rolling");
  let workers: Awaited<ReturnType<typeof startWorkers>>;
  let a: GatewayProcess;
  let b: GatewayProcess;
  let url: string;
  let stop: () => void;
  beforeAll(async () => {
    workers = await startWorkers(loadWorkerConfig({ PORT: "0", LOG_LEVEL: "silent" }));
    [a, b] = await spawnGatewayPair(prefix, {
      WORKERS_URL: `http://127.0.0.1:${workers.port}`,
      SHUTDOWN_DELAY_SECONDS: delay,
    });
    const host = (g: GatewayProcess) => new URL(g.url).host;
    ({ url, stop } = await runHaproxy((cfg) =>
      cfg
        .replace(/^(\s*server gateway1 )\S+/m, `$1${host(a)}`)
        .replace(/^(\s*server gateway2 )\S+/m, `$1${host(b)}`),
    ));
  }, 90_000);
  afterAll(async () => {
    stop?.();
    await Promise.all([a?.stop(), b?.stop()]);
    await workers?.stop();
    await dropPrefix(prefix);
  });

  it("answers every call while a replica is SIGTERMed mid-stream, each charged once", async () => {
    const { key } = await fundedAccount(b.url, 10_000);
    const before = await balanceOf(b.url, key);
    const answers: Record<string, number> = {};
    let streaming = true;
    const stream = async () => {
      while (streaming) {
        const res = await callTool(url, key, "hash", { text: "rolling restart" }).catch(
          (err: Error) => ({ status: "no answer", body: { error: { code: err.message } } }),
        );
        const answer = `${res.status} ${res.body?.error?.code ?? ""}`.trim();
        answers[answer] = (answers[answer] ?? 0) + 1;
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const streams = Array.from({ length: 4 }, stream);
    await new Promise((r) => setTimeout(r, 1500));
    // The replica drains and exits while the calls keep coming; then a while more on the other.
    expect(await a.stop("SIGTERM")).toBe(0);
    await new Promise((r) => setTimeout(r, 1000));
    streaming = false;
    await Promise.all(streams);

    const answered = answers["200"] ?? 0;
    expect(answered).toBeGreaterThan(50);
    expect(answers).toEqual({ "200": answered });
    expect(before - (await balanceOf(b.url, key))).toBe(answered * hash.cost);
  }, 30_000);
});
