import { spawn, spawnSync } from "node:child_process";
import express from "express";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ConfigError, envSchema, loadConfig } from "../../src/config.js";
import { ENDPOINT_LIMITS } from "../../src/http/endpoint-limits.js";

/** The least a production gateway needs set. */
const production = {
  NODE_ENV: "production",
  REDIS_URL: "redis://x",
  ADMIN_API_KEY: "a".repeat(24),
  SECRET_KEY: "s".repeat(32),
  PUBLIC_BASE_URL: "https://api.example.com",
  SMTP_URL: "smtp://x",
  MAIL_FROM: "Toolgate <no-reply@api.example.com>",
};

/** Every setting the schema reads, as its JSON Schema (output side) describes it: type, default, bounds. */
const settings = z.toJSONSchema(envSchema, { io: "output", unrepresentable: "any" })
  .properties as Record<string, { type?: string; default?: unknown }>;

/** The problems loadConfig refuses `env` with; [] when it accepts it. */
const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

describe("an empty or blank setting", () => {
  // REDIS_KEY_PREFIX= is a value of its own: no prefix (a Redis kept for one deployment).
  const names = Object.keys(settings).filter((name) => name !== "REDIS_KEY_PREFIX");

  it("is unset, for every setting: compose passes an empty value for each one left out of .env", () => {
    expect(names.length).toBeGreaterThan(60);
    const unset = loadConfig({});
    for (const name of names)
      for (const blank of ["", " ", "\t \n"])
        expect(loadConfig({ [name]: blank }), `${name}=${JSON.stringify(blank)}`).toEqual(unset);
  });

  it("in production, is a required setting missing, named; any other is its default", () => {
    const required = Object.keys(production).filter((name) => name !== "NODE_ENV");
    const defaults = loadConfig(production);
    for (const name of names.filter((name) => name !== "NODE_ENV"))
      for (const blank of ["", "  "]) {
        const env = { ...production, [name]: blank };
        if (required.includes(name))
          expect(problemsOf(env), name).toEqual([`${name} is required when NODE_ENV=production`]);
        else expect(loadConfig(env), name).toEqual(defaults);
      }
  });

  it("is unset for a network's settings too: its USDC token's address, name and version are the defaults", () => {
    const x402 = {
      X402_NETWORKS: "base-sepolia",
      X402_PAY_TO: `0x${"1".repeat(40)}`,
      X402_RELAYER_PRIVATE_KEY: `0x${"3".repeat(64)}`,
      BASE_SEPOLIA_RPC_URL: "http://127.0.0.1:8545",
    };
    const defaults = loadConfig(x402).x402?.networks;
    expect(defaults?.[0]?.usdc).toEqual({
      address: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
      name: "USDC",
      version: "2",
    });
    expect(
      loadConfig({
        ...x402,
        BASE_SEPOLIA_USDC_ADDRESS: "",
        BASE_SEPOLIA_USDC_NAME: " ",
        BASE_SEPOLIA_USDC_VERSION: "",
      }).x402?.networks,
    ).toEqual(defaults);
    expect(problemsOf({ ...x402, BASE_SEPOLIA_RPC_URL: " " })).toEqual([
      "BASE_SEPOLIA_RPC_URL is required for the x402 network base-sepolia",
    ]);
    expect(problemsOf({ ...x402, X402_PAY_TO: "" })).toEqual([
      "X402_PAY_TO is required when X402_NETWORKS is set",
    ]);
  });

  it("keeps REDIS_KEY_PREFIX= as no prefix, its one meaning before", () => {
    expect(loadConfig({ REDIS_KEY_PREFIX: "" }).redisKeyPrefix).toBe("");
    expect(loadConfig({}).redisKeyPrefix).toBe("tg:");
  });
});

describe("a numeric setting", () => {
  // From the schema: a setting added later is in the table without editing it.
  const numeric = Object.entries(settings).filter(
    ([, s]) => s.type === "integer" || s.type === "number",
  );
  const integers = numeric.filter(([, s]) => s.type === "integer").map(([name]) => name);
  const decimals = numeric.filter(([, s]) => s.type === "number").map(([name]) => name);

  it("is found in the schema, each with its default", () => {
    expect(integers).toEqual(
      expect.arrayContaining(["PORT", "SHUTDOWN_GRACE_SECONDS", "FACILITATOR_FEE_CREDITS"]),
    );
    expect(integers.length).toBeGreaterThan(30);
    expect(decimals).toEqual([
      "BOOKS_EXPORT_DEGRADED_AFTER_SECONDS",
      "DASHBOARD_SESSION_IDLE_MINUTES",
      "DASHBOARD_SESSION_MAX_HOURS",
      "DASHBOARD_SIGN_IN_LINK_MINUTES",
    ]);
    for (const [name, s] of numeric) expect(typeof s.default, name).toBe("number");
  });

  it("takes decimal digits, and an empty or blank value as unset (PORT= was port 0, SHUTDOWN_GRACE_SECONDS= no drain)", () => {
    const unset = loadConfig({});
    for (const [name, s] of numeric) {
      const given = [String(s.default), `00${s.default}`, "", "   "];
      if (s.type === "number") given.push(`${s.default}.0`);
      for (const value of given)
        expect(loadConfig({ [name]: value }), `${name}=${JSON.stringify(value)}`).toEqual(unset);
    }
    expect(loadConfig({ PORT: "8080" }).port).toBe(8080);
    expect(loadConfig({ DASHBOARD_SESSION_IDLE_MINUTES: "0.5" }).dashboard.sessionIdleMs).toBe(
      30_000,
    );
  });

  it("refuses any other form, naming the setting (PORT=0x50 was port 80, PORT=1e3 port 1000)", () => {
    const refused = [
      "0x50",
      "0o17",
      "0b11",
      "1e3",
      "+5",
      "-1",
      " 5",
      "5 ",
      "1_000",
      "5,5",
      "Infinity",
      "NaN",
      "five",
      "\u0665",
    ];
    for (const [name, s] of numeric)
      for (const value of [
        ...refused,
        ...(s.type === "integer" ? ["5.0", "5.5"] : [".5", "5.", "1.2.3"]),
      ])
        expect(problemsOf({ [name]: value }), `${name}=${JSON.stringify(value)}`).toEqual([
          expect.stringMatching(new RegExp(`^${name}: `)),
        ]);
  });
});

describe("a URL or list setting other URLs are built from", () => {
  it("refuses user:password@, a query or a fragment in PUBLIC_BASE_URL, without repeating it: every link and document URL is built on it", () => {
    for (const value of [
      "https://user:hunter2@gw.example.com",
      "https://:hunter2@gw.example.com",
      "https://hunter2@gw.example.com",
      "https://@gw.example.com",
      "https://gw.example.com?x=1#frag",
      "https://gw.example.com/?token=hunter2",
      "https://gw.example.com/?",
      "https://gw.example.com#hunter2",
      "https://gw.example.com/base#",
    ]) {
      const problems = problemsOf({ PUBLIC_BASE_URL: value });
      expect(problems, value).toEqual([
        "PUBLIC_BASE_URL: PUBLIC_BASE_URL must not hold user:password@, a query (?) or a fragment (#): every link and document URL is built on it",
      ]);
      expect(problems.join(), value).not.toContain("hunter2");
    }
    expect(loadConfig({ PUBLIC_BASE_URL: "https://gw.example.com/" }).publicBaseUrl).toBe(
      "https://gw.example.com",
    );
    expect(
      loadConfig({ PUBLIC_BASE_URL: "https://gw.example.com:8443/toolgate" }).publicBaseUrl,
    ).toBe("https://gw.example.com:8443/toolgate");
    // Its path is what every page's addresses start with (behind a proxy that strips it).
    expect(loadConfig({ PUBLIC_BASE_URL: "https://gw.example.com/toolgate/" }).basePath).toBe(
      "/toolgate",
    );
    expect(loadConfig({ PUBLIC_BASE_URL: "https://gw.example.com/" }).basePath).toBe("");
    expect(loadConfig({}).basePath).toBe("");
    // As written (an SSO provider compares the redirect URI built on it exactly), its path the
    // same text as the pages' addresses.
    expect(loadConfig({ PUBLIC_BASE_URL: "https://GW.example.com:443/tool%20gate" })).toMatchObject(
      {
        publicBaseUrl: "https://GW.example.com:443/tool%20gate",
        basePath: "/tool%20gate",
      },
    );
    // A path goes before every address in HTML attributes, scripts and Location headers: only
    // characters that mean the same in each, no empty segments.
    for (const value of [
      "https://gw.example.com/a&lt/",
      "https://gw.example.com/it's",
      "https://gw.example.com/a//b",
      "https://gw.example.com/a;b",
      // Written otherwise than the parser keeps it: the links and the pages would disagree.
      "https://gw.example.com/tool gate",
      "https://gw.example.com/a/../b",
    ])
      expect(problemsOf({ PUBLIC_BASE_URL: value }), value).toEqual([
        "PUBLIC_BASE_URL: PUBLIC_BASE_URL's path may hold only letters, digits, -._~ and %-escapes between single slashes: every page's links, forms and redirects start with it",
      ]);
  });

  it("refuses anything but an origin in a worker pool's URL: calls go to its origin, whatever else it holds", () => {
    for (const name of [
      "WORKERS_URL",
      "WORKER_POOL_GENERAL_URL",
      "WORKER_POOL_PROVIDER_URL",
      "WORKER_POOL_HEAVY_URL",
    ]) {
      for (const value of [
        "http://user:hunter2@workers:8500",
        "http://workers:8500/pool",
        "http://workers:8500?key=hunter2",
        "http://workers:8500/#hunter2",
      ]) {
        const problems = problemsOf({ [name]: value });
        expect(problems, `${name}=${value}`).toEqual([
          `${name}: ${name} must be the workers' origin only (http://host:port): no user:password@, path, query or fragment`,
        ]);
        expect(problems.join()).not.toContain("hunter2");
      }
      for (const value of ["http://workers:8500", "https://workers.example.com/"])
        expect(problemsOf({ [name]: value }), `${name}=${value}`).toEqual([]);
    }
  });

  it("ignores the empty entries of MCP_ALLOWED_HOSTS and X402_NETWORKS, and refuses a list of nothing else (MCP refused every host)", () => {
    expect(
      loadConfig({ MCP_ALLOWED_HOSTS: "gw.example.com, ,API.example.com," }).mcpAllowedHosts,
    ).toEqual(["gw.example.com", "api.example.com"]);
    // An entry the Host header (less its port) can never equal is refused, naming the form.
    for (const value of [
      "https://gw.example.com",
      "gw.example.com:443",
      "gw.example.com/mcp",
      "a b",
    ])
      expect(problemsOf({ MCP_ALLOWED_HOSTS: `localhost,${value}` }), value).toEqual([
        "MCP_ALLOWED_HOSTS: MCP_ALLOWED_HOSTS takes host names only (gw.example.com, [::1]): no scheme, port or path",
      ]);
    expect(problemsOf({ MCP_ALLOWED_HOSTS: "gw.example.com.,[::1],127.0.0.1,my-host" })).toEqual(
      [],
    );
    for (const value of [",", " , ", ",,"]) {
      expect(problemsOf({ MCP_ALLOWED_HOSTS: value }), value).toEqual([
        "MCP_ALLOWED_HOSTS: MCP_ALLOWED_HOSTS must name at least one host name (comma-separated)",
      ]);
      expect(problemsOf({ X402_NETWORKS: value }), value).toEqual([
        "X402_NETWORKS: X402_NETWORKS must name at least one network (comma-separated)",
      ]);
    }
    const x402 = {
      X402_NETWORKS: "base-sepolia, ,",
      X402_PAY_TO: `0x${"1".repeat(40)}`,
      X402_RELAYER_PRIVATE_KEY: `0x${"3".repeat(64)}`,
      BASE_SEPOLIA_RPC_URL: "http://127.0.0.1:8545, ,http://127.0.0.1:8546",
    };
    expect(loadConfig(x402).x402?.networks.map((n) => [n.name, n.rpcUrls])).toEqual([
      ["base-sepolia", ["http://127.0.0.1:8545", "http://127.0.0.1:8546"]],
    ]);
  });
});

describe("configuration", () => {
  it("runs with embedded defaults when nothing is set", () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      env: "development",
      port: 8402,
      redisUrl: undefined,
      devSeed: true,
      publicBaseUrl: "http://localhost:8402",
      keysPerAccount: 100,
    });
    // No key yet: start-up keeps one in the store, shared by every process of the deployment.
    expect(config.secretKeys).toEqual([]);
  });

  it("cannot be changed once loaded, at any depth: every part reads the same settings", () => {
    const config = loadConfig({
      X402_NETWORKS: "base-sepolia",
      X402_PAY_TO: `0x${"1".repeat(40)}`,
      BASE_SEPOLIA_RPC_URL: "http://127.0.0.1:8545",
      X402_RELAYER_PRIVATE_KEY: `0x${"3".repeat(64)}`,
    });
    expect(() => {
      (config as { port: number }).port = 1;
    }).toThrow(TypeError);
    expect(() => config.secretKeys.push("k".repeat(32))).toThrow(TypeError);
    expect(() => {
      config.x402!.networks[0]!.rpcUrls.push("http://elsewhere");
    }).toThrow(TypeError);
    expect(config.port).toBe(8402);
  });

  it("switches to Redis with REDIS_URL and still seeds the development account", () => {
    expect(loadConfig({ REDIS_URL: "redis://127.0.0.1:6379" })).toMatchObject({
      redisUrl: "redis://127.0.0.1:6379",
      redisCluster: false,
      devSeed: true,
    });
    expect(loadConfig({ REDIS_URL: "redis://10.0.0.5:7000", REDIS_CLUSTER: "1" })).toMatchObject({
      redisCluster: true,
    });
  });

  it("reads TOOL_TIMEOUTS by tool (an alias stands for its tool), refusing unknown names and timeouts a timer cannot keep", () => {
    expect(loadConfig({ TOOL_TIMEOUTS: "hash=3000,uuid=250" }).toolTimeouts).toEqual({
      hash: 3000,
      "id-generate": 250,
    });
    const problems = (value: string) => {
      try {
        loadConfig({ TOOL_TIMEOUTS: value });
      } catch (err) {
        return (err as ConfigError).message;
      }
      return "accepted";
    };
    expect(problems("hsh=3000,hash=0,qr-code=3000000000,uuid=5")).toBe(
      "Invalid configuration:\n" +
        "  - TOOL_TIMEOUTS: no tool is named hsh\n" +
        "  - TOOL_TIMEOUTS: hash's timeout must be 1 to 2147483647 ms\n" +
        "  - TOOL_TIMEOUTS: qr-code's timeout must be 1 to 2147483647 ms",
    );
    // Every duration is one a Node timer keeps (a longer one fires after 1 ms).
    expect(problems("hash=5")).toBe("accepted");
    for (const [name, value] of [
      ["SHUTDOWN_GRACE_SECONDS", "3000000"],
      ["POOL_QUEUE_TIMEOUT_MS", "2147483648"],
    ])
      try {
        loadConfig({ [name!]: value! });
        expect.unreachable(`${name} accepted`);
      } catch (err) {
        expect((err as ConfigError).message).toContain(name!);
      }
  });

  it("takes a database number as REDIS_URL's path, and nothing else there; a Cluster only database 0", () => {
    for (const url of [
      "redis://h:6379",
      "redis://h:6379/",
      "redis://h:6379/2",
      "rediss://u:p@h/15",
    ])
      expect(loadConfig({ REDIS_URL: url }).redisUrl).toBe(url);
    const refused = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (err) {
        return (err as ConfigError).message;
      }
      return "accepted";
    };
    for (const url of ["redis://h:6379/db2", "redis://h:6379/2/x", "redis://h/-1"])
      expect(refused({ REDIS_URL: url })).toContain(
        "REDIS_URL's path must be a database number (redis://host:port/2) or nothing",
      );
    expect(refused({ REDIS_URL: "redis://h:7000/3", REDIS_CLUSTER: "1" })).toContain(
      "a Redis Cluster has only database 0",
    );
    expect(refused({ REDIS_URL: "redis://h:7000/0", REDIS_CLUSTER: "1" })).toBe("accepted");
  });

  it("names every missing required setting in production", () => {
    try {
      loadConfig({ NODE_ENV: "production" });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const { problems } = err as ConfigError;
      for (const name of [
        "REDIS_URL",
        "ADMIN_API_KEY",
        "SECRET_KEY",
        "PUBLIC_BASE_URL",
        "SMTP_URL",
        "MAIL_FROM",
      ]) {
        expect(problems.some((p) => p.startsWith(name))).toBe(true);
      }
    }
  });

  it("reads SECRET_KEY as a keyring: the first seals and signs, every key opens and verifies", () => {
    const [a, b] = ["a".repeat(32), "b".repeat(40)];
    expect(loadConfig({ SECRET_KEY: `${a}, ${b}` }).secretKeys).toEqual([a, b]);
    expect(() => loadConfig({ SECRET_KEY: `${a},short` })).toThrow(
      /SECRET_KEY must be at least 32 characters/,
    );
  });

  it("takes a relayer pool from X402_RELAYER_PRIVATE_KEYS (with or without X402_RELAYER_PRIVATE_KEY), each key once", () => {
    const [a, b] = [`0x${"a".repeat(64)}`, `0x${"B".repeat(64)}`];
    const x402 = {
      X402_NETWORKS: "base-sepolia",
      BASE_SEPOLIA_RPC_URL: "http://127.0.0.1:8545",
      X402_PAY_TO: `0x${"1".repeat(40)}`,
    };
    expect(
      loadConfig({ ...x402, X402_RELAYER_PRIVATE_KEYS: `${a}, ${b}`, X402_RELAYER_PRIVATE_KEY: b })
        .x402?.relayerKeys,
    ).toEqual([a, b.toLowerCase()]);
    expect(loadConfig({ ...x402, X402_RELAYER_PRIVATE_KEY: a }).x402).toMatchObject({
      relayerKeys: [a],
      rpcBatchSize: 100,
      sendSync: 8,
    });
    expect(
      loadConfig({ ...x402, X402_RELAYER_PRIVATE_KEY: a, X402_SEND_SYNC: "0" }).x402?.sendSync,
    ).toBe(0);
    expect(() => loadConfig({ ...x402, X402_RELAYER_PRIVATE_KEYS: `${a},0x12` })).toThrow(
      /X402_RELAYER_PRIVATE_KEYS/,
    );
    expect(() => loadConfig(x402)).toThrow(
      /X402_RELAYER_PRIVATE_KEY \(or X402_RELAYER_PRIVATE_KEYS\) is required/,
    );
  });

  it("trusts no proxy unless TRUST_PROXY names one, and never trusts everyone", () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: "172.28.0.2" }).trustProxy).toBe("172.28.0.2");
    expect(loadConfig({ TRUST_PROXY: "loopback, 10.0.0.0/8" }).trustProxy).toBe(
      "loopback,10.0.0.0/8",
    );
    expect(loadConfig({ TRUST_PROXY: "1" }).trustProxy).toBe(1);
    for (const bad of ["true", "everyone"])
      expect(() => loadConfig({ TRUST_PROXY: bad })).toThrow(/TRUST_PROXY must list/);
    expect(() => loadConfig({ TRUST_PROXY: "10.0.0.0/99" })).toThrow(
      /TRUST_PROXY: 10.0.0.0\/99 has no valid prefix length/,
    );
  });

  it("refuses a TRUST_PROXY entry Express cannot parse, and a range wider than a proxy's network", () => {
    for (const good of [
      "10.0.0.0/8",
      "2001:db8::/32",
      "::ffff:10.0.0.0/104",
      "loopback, 172.16.0.0/12",
      "fe80::1",
    ]) {
      const { trustProxy } = loadConfig({ TRUST_PROXY: good });
      // What start-up does with it: Express compiles it at once (proxy-addr), throwing if it cannot.
      expect(() => express().set("trust proxy", trustProxy), good).not.toThrow();
    }
    for (const unparsed of ["127.1", "10.0.0.0/255.0.0.0", "10.0.0.0/8/8", "10.0.0.0/x"])
      expect(() => loadConfig({ TRUST_PROXY: unparsed }), unparsed).toThrow(
        /TRUST_PROXY must list/,
      );
    // Together, the first two are every IPv4 address; ::ffff:0:0/96 and ::/32 hold every IPv4 client as a dual-stack server sees it.
    for (const wide of [
      "0.0.0.0/1,128.0.0.0/1",
      "0.0.0.0/0",
      "::/0",
      "10.0.0.0/7",
      "2001:db8::/31",
      "::ffff:0:0/96",
      "::/32",
    ])
      expect(() => loadConfig({ TRUST_PROXY: wide }), wide).toThrow(
        /TRUST_PROXY: \S+ is too wide for a proxy's network/,
      );
    expect(() => loadConfig({ TRUST_PROXY: "1.2.3.4/33" })).toThrow(
      /TRUST_PROXY: 1.2.3.4\/33 has no valid prefix length/,
    );
  });

  it("refuses a URL setting that is not a URL of its kind, naming it without its value (it can hold a password)", () => {
    const bad = {
      REDIS_URL: ["notaurl:hunter2secretpw", "http://127.0.0.1:6379", "redis://"],
      DATABASE_URL: ["postgres://books:hunter2secretpw@[::1/toolgate"],
      WORKERS_URL: ["notaurl:hunter2secretpw", "ftp://worker:hunter2secretpw@host"],
      WORKER_POOL_HEAVY_URL: ["notaurl:hunter2secretpw"],
      PUBLIC_BASE_URL: ["mailto:ops@example.com"],
    };
    for (const [name, values] of Object.entries(bad))
      for (const value of values) {
        const thrown = (() => {
          try {
            loadConfig({ [name]: value });
          } catch (err) {
            return err as ConfigError;
          }
        })();
        expect(thrown, `${name}=${value}`).toBeInstanceOf(ConfigError);
        expect(thrown!.problems).toEqual([
          expect.stringMatching(new RegExp(`^${name}: ${name} must be`)),
        ]);
        expect(thrown!.message).not.toContain("hunter2");
      }
    expect(loadConfig({ REDIS_URL: "rediss://:pw@redis.example.com:6380" }).redisUrl).toBe(
      "rediss://:pw@redis.example.com:6380",
    );
    expect(
      loadConfig({ DATABASE_URL: "postgres://books@/toolgate?host=/var/run/postgresql" }).books
        ?.url,
    ).toBe("postgres://books@/toolgate?host=/var/run/postgresql");
  });

  it("never takes blanks for a secret, and refuses an ADMIN_API_KEY that is one of the SECRET_KEY keys", () => {
    // A secret of spaces is none (unset, as every blank setting): production names it missing.
    const blank = loadConfig({
      ADMIN_API_KEY: " ".repeat(24),
      METRICS_TOKEN: " ".repeat(16),
      SECRET_KEY: " ".repeat(32),
    });
    expect([blank.adminApiKey, blank.metricsToken, blank.secretKeys]).toEqual([
      undefined,
      undefined,
      [],
    ]);
    for (const name of ["ADMIN_API_KEY", "SECRET_KEY"])
      expect(() => loadConfig({ ...production, [name]: " ".repeat(40) })).toThrow(
        `${name} is required when NODE_ENV=production`,
      );
    // Spaces around a key do not count towards its length.
    expect(() => loadConfig({ ADMIN_API_KEY: ` ${"a".repeat(20)}   ` })).toThrow(/ADMIN_API_KEY/);
    expect(() => loadConfig({ METRICS_TOKEN: ` ${"m".repeat(12)}     ` })).toThrow(/METRICS_TOKEN/);
    expect(() => loadConfig({ SECRET_KEY: `${"s".repeat(32)}, ${" ".repeat(32)}` })).toThrow(
      /SECRET_KEY/,
    );
    const [secret, older] = ["s".repeat(32), "o".repeat(32)];
    for (const admin of [secret, older])
      expect(() => loadConfig({ SECRET_KEY: `${secret}, ${older}`, ADMIN_API_KEY: admin })).toThrow(
        /ADMIN_API_KEY must not be one of the SECRET_KEY keys/,
      );
    expect(loadConfig({ SECRET_KEY: secret, ADMIN_API_KEY: "a".repeat(24) }).adminApiKey).toBe(
      "a".repeat(24),
    );
  });

  it("reads ENDPOINT_LIMITS over the defaults and names an unknown limit", () => {
    expect(loadConfig({ ENDPOINT_LIMITS: "wallet-challenge=5/10" }).endpointLimits).toMatchObject({
      "wallet-challenge": { count: 5, windowSeconds: 10 },
      "webhook-test": { count: 20, windowSeconds: 60 },
    });
    expect(() => loadConfig({ ENDPOINT_LIMITS: "signin=5/10" })).toThrow(
      /ENDPOINT_LIMITS: unknown limit signin/,
    );
    // Every limit can be named, digits and all (x402-refused), each at a value of its own.
    const every = Object.keys(ENDPOINT_LIMITS).map((name, i) => `${name}=${i + 1}/${i + 2}`);
    const read = loadConfig({ ENDPOINT_LIMITS: every.join(",") }).endpointLimits;
    for (const [i, name] of Object.keys(ENDPOINT_LIMITS).entries())
      expect(read[name as keyof typeof read], name).toMatchObject({
        count: i + 1,
        windowSeconds: i + 2,
      });
  });

  it("bounds an endpoint's and a worker's largest answer alike, at 256 MiB: each is read whole as one string", () => {
    const cap = 256 * 1024 * 1024;
    for (const name of ["WORKER_MAX_RESPONSE_BYTES", "UPSTREAM_MAX_RESPONSE_BYTES"]) {
      expect(problemsOf({ [name]: String(cap) }), name).toEqual([]);
      for (const value of [String(cap + 1), "999999999999"])
        expect(problemsOf({ [name]: value }), `${name}=${value}`).toEqual([
          expect.stringMatching(new RegExp(`^${name}: .*${cap}`)),
        ]);
    }
    expect(loadConfig({ UPSTREAM_MAX_RESPONSE_BYTES: String(cap) }).upstream.maxResponseBytes).toBe(
      cap,
    );
  });

  it("refuses private webhook targets and SSO issuers in production", () => {
    expect(loadConfig(production).webhookAllowPrivateTargets).toBe(false);
    expect(() => loadConfig({ ...production, WEBHOOK_ALLOW_PRIVATE_TARGETS: "1" })).toThrow(
      /WEBHOOK_ALLOW_PRIVATE_TARGETS=1 is refused/,
    );
    expect(loadConfig({ WEBHOOK_ALLOW_PRIVATE_TARGETS: "1" }).webhookAllowPrivateTargets).toBe(
      true,
    );
    expect(loadConfig(production).ssoAllowPrivateTargets).toBe(false);
    expect(() => loadConfig({ ...production, SSO_ALLOW_PRIVATE_TARGETS: "1" })).toThrow(
      /SSO_ALLOW_PRIVATE_TARGETS=1 is refused/,
    );
    expect(loadConfig({ SSO_ALLOW_PRIVATE_TARGETS: "1" }).ssoAllowPrivateTargets).toBe(true);
  });

  it("refuses WEB_ALLOW_PRIVATE_TARGETS=1 in production when it starts the bundled workers, which would read it", () => {
    const refused =
      "WEB_ALLOW_PRIVATE_TARGETS=1 is refused when NODE_ENV=production (the bundled tool workers read it)";
    expect(problemsOf({ ...production, WEB_ALLOW_PRIVATE_TARGETS: "1" })).toEqual([refused]);
    // One pool left to the bundled workers is enough: they start.
    expect(
      problemsOf({
        ...production,
        WEB_ALLOW_PRIVATE_TARGETS: "1",
        WORKER_POOL_GENERAL_URL: "http://workers:8500",
        WORKER_POOL_PROVIDER_URL: "http://workers:8500",
      }),
    ).toEqual([refused]);
    // Workers of their own read their own environment (and refuse it there).
    expect(
      problemsOf({
        ...production,
        WEB_ALLOW_PRIVATE_TARGETS: "1",
        WORKERS_URL: "http://workers:8500",
      }),
    ).toEqual([]);
    expect(problemsOf({ WEB_ALLOW_PRIVATE_TARGETS: "1" })).toEqual([]);
  });

  it("refuses DEV_SEED=1 in production: it would print a live key derived from SECRET_KEY", () => {
    expect(loadConfig(production).devSeed).toBe(false);
    expect(loadConfig({ ...production, DEV_SEED: "0" }).devSeed).toBe(false);
    expect(() => loadConfig({ ...production, DEV_SEED: "1" })).toThrow(
      /DEV_SEED=1 is refused when NODE_ENV=production/,
    );
    expect(loadConfig({ NODE_ENV: "test", DEV_SEED: "1" }).devSeed).toBe(true);
  });

  it("rejects malformed values by name", () => {
    expect(() => loadConfig({ PORT: "http" })).toThrow(/PORT/);
    expect(() => loadConfig({ ADMIN_API_KEY: "short" })).toThrow(/ADMIN_API_KEY/);
    expect(() => loadConfig({ REDIS_KEY_PREFIX: "{tg}:" })).toThrow(/REDIS_KEY_PREFIX/);
    expect(() => loadConfig({ REDIS_CLUSTER: "yes" })).toThrow(/REDIS_CLUSTER/);
  });

  it("refuses an SMTP_URL nodemailer cannot use, without repeating it (it can hold a password)", () => {
    for (const bad of [
      "notaurl",
      "mailer:pw@smtp.example.com:587",
      "http://smtp.example.com",
      "smtp://",
    ])
      expect(() => loadConfig({ SMTP_URL: bad }), bad).toThrow(
        /SMTP_URL must be smtp:\/\/host:port or smtps:\/\/host:port/,
      );
    try {
      loadConfig({ SMTP_URL: "mailer:hunter2-smtp@smtp.example.com" });
    } catch (err) {
      expect(String(err)).not.toContain("hunter2");
    }
    expect(loadConfig({ SMTP_URL: "smtps://mailer:pw@smtp.example.com:465" }).smtpUrl).toBe(
      "smtps://mailer:pw@smtp.example.com:465",
    );
  });

  it("says a start-up mistake in one line, not a stack: timeouts the wrong way round, a HOST that does not resolve", async () => {
    const start = (env: Record<string, string>) =>
      new Promise<{ status: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
          cwd: new URL("../..", import.meta.url).pathname,
          env: {
            PATH: process.env.PATH,
            NODE_ENV: "development",
            DEV_CHAIN: "0",
            PORT: "0",
            ...env,
          },
          stdio: ["ignore", "ignore", "pipe"],
          timeout: 20_000,
        });
        let stderr = "";
        child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
        child.on("close", (status) => resolve({ status, stderr }));
      });
    // Side by side: each is a process start.
    const [timeouts, host] = await Promise.all([
      start({ HEADERS_TIMEOUT_MS: "40000", REQUEST_TIMEOUT_MS: "30000" }),
      start({ HOST: "no-such-host.invalid" }),
    ]);
    expect(timeouts.status).toBe(78);
    expect(timeouts.stderr).toBe(
      "Invalid configuration:\n  - HEADERS_TIMEOUT_MS (40000) must not exceed REQUEST_TIMEOUT_MS (30000): the headers are part of the request\n",
    );
    expect(host.status).toBe(1);
    expect(host.stderr).toBe(
      "Toolgate could not start: HOST no-such-host.invalid does not resolve to an address; set HOST\n",
    );
  });

  it("takes MAIL_FROM as an address or a name and an address, and refuses anything else", () => {
    for (const good of [
      "no-reply@example.com",
      "Toolgate <no-reply@example.com>",
      '"Toolgate, Inc." <no-reply@mail.example.com>',
      "<no-reply@example.com>",
    ])
      expect(problemsOf({ ...production, MAIL_FROM: good }), good).toEqual([]);
    for (const bad of [
      "garbage",
      "no-reply@localhost",
      "Toolgate <garbage>",
      "Toolgate, Inc. <no-reply@example.com>", // an unquoted comma: two addresses
      "a@example.com\r\nBcc: b@example.com",
    ])
      expect(problemsOf({ ...production, MAIL_FROM: bad }), bad).toEqual([
        "MAIL_FROM: MAIL_FROM must be an address: a@example.com or Name <a@example.com>",
      ]);
    // Development and tests keep a default From (e-mails go to the log there without SMTP_URL).
    expect(loadConfig({}).mailFrom).toBe("Toolgate <no-reply@toolgate.local>");
  });

  it("refuses a CREDIT_PRICE_USD of 0 or below: every price would be 0", () => {
    for (const zero of ["0", "0.0", "0.000000"])
      expect(problemsOf({ CREDIT_PRICE_USD: zero }), zero).toEqual([
        "CREDIT_PRICE_USD: CREDIT_PRICE_USD must be more than 0 (at least 0.000001, one USDC atomic unit): at 0 every x402 price and credit pack is free",
      ]);
    for (const bad of ["-1", "-0.002", "abc", "0.0000001"])
      expect(problemsOf({ CREDIT_PRICE_USD: bad }), bad).toEqual([
        "CREDIT_PRICE_USD: CREDIT_PRICE_USD must be a USD amount above 0 with at most 6 decimals, e.g. 0.002",
      ]);
    // The least price there is: one atomic unit, so a one-credit call still costs something.
    expect(loadConfig({ CREDIT_PRICE_USD: "0.000001" }).creditPriceAtomic).toBe(1n);
  });

  it("refuses to start in production without MAIL_FROM, with a From that is no address, or with a free credit: exit 78, one line each", () => {
    const start = (env: Record<string, string | undefined>) =>
      spawnSync(process.execPath, ["--import", "tsx", "src/main.ts"], {
        cwd: new URL("../..", import.meta.url).pathname,
        env: { PATH: process.env.PATH, ...production, PORT: "0", ...env },
        encoding: "utf8",
        timeout: 20_000,
      });
    expect(start({ MAIL_FROM: undefined }).stderr).toBe(
      "Invalid configuration:\n  - MAIL_FROM is required when NODE_ENV=production\n",
    );
    const bad = start({ MAIL_FROM: "garbage", CREDIT_PRICE_USD: "0" });
    expect([bad.status, bad.stderr, bad.stdout]).toEqual([
      78,
      "Invalid configuration:\n" +
        "  - MAIL_FROM: MAIL_FROM must be an address: a@example.com or Name <a@example.com>\n" +
        "  - CREDIT_PRICE_USD: CREDIT_PRICE_USD must be more than 0 (at least 0.000001, one USDC atomic unit): at 0 every x402 price and credit pack is free\n",
      "",
    ]);
  });

  it("refuses a bad REDIS_URL, TRUST_PROXY or DEV_SEED before starting anything: exit 78, one line each, no value repeated", () => {
    const start = (env: Record<string, string>) =>
      spawnSync(process.execPath, ["--import", "tsx", "src/main.ts"], {
        cwd: new URL("../..", import.meta.url).pathname,
        env: {
          PATH: process.env.PATH,
          ...production,
          PORT: "0",
          REDIS_URL: "redis://127.0.0.1:6379",
          ...env,
        },
        encoding: "utf8",
        timeout: 20_000,
      });
    // The schema's problems come first, alone: the rules across settings are checked once it passes.
    const redis = start({ REDIS_URL: "notaurl:hunter2secretpw" });
    expect([redis.status, redis.stderr, redis.stdout]).toEqual([
      78,
      "Invalid configuration:\n  - REDIS_URL: REDIS_URL must be redis://host:port or rediss://host:port (with user:password@ if needed)\n",
      "",
    ]);
    const proxySeed = start({ TRUST_PROXY: "0.0.0.0/0", DEV_SEED: "1" });
    expect([proxySeed.status, proxySeed.stderr, proxySeed.stdout]).toEqual([
      78,
      "Invalid configuration:\n" +
        "  - DEV_SEED=1 is refused when NODE_ENV=production\n" +
        "  - TRUST_PROXY: 0.0.0.0/0 is too wide for a proxy's network (at most /8 for IPv4, /32 for IPv6): any client could set its own address\n",
      "",
    ]);
  });

  it("refuses to start in production without its settings, saying which", () => {
    const run = spawnSync(process.execPath, ["--import", "tsx", "src/main.ts"], {
      cwd: new URL("../..", import.meta.url).pathname,
      env: { PATH: process.env.PATH, NODE_ENV: "production", REDIS_URL: "redis://127.0.0.1:6379" },
      encoding: "utf8",
      timeout: 20_000,
    });
    expect(run.status).toBe(78);
    expect(run.stderr).toContain("ADMIN_API_KEY is required when NODE_ENV=production");
    expect(run.stderr).toContain("SMTP_URL is required when NODE_ENV=production");
    expect(run.stderr).toContain("MAIL_FROM is required when NODE_ENV=production");
    expect(run.stderr).not.toContain("REDIS_URL is required");
  });
});
