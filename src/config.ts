import ipaddr from "ipaddr.js";
import { z } from "zod";
import type { Address, Hex } from "viem";
import {
  NETWORK_NAMES,
  networkFromEnv,
  type NetworkName,
  type PaymentNetwork,
} from "./payments/networks.js";
import { parseUsd } from "./lib/money.js";
import {
  ENDPOINT_LIMITS_PATTERN,
  endpointLimits,
  type EndpointLimits,
} from "./http/endpoint-limits.js";
import { API_VERSIONS, apiVersionsSchema, type ApiVersion } from "./http/versioning.js";
import { MAX_TEXT_CHARS, MIN_BODY_LIMIT_BYTES } from "./tools/catalogue/limits.js";
import { findTool } from "./tools/catalogue/index.js";
import { loadToolsFile } from "./tools/custom/tools-file.js";
import { needsBundledWorkers } from "./tools/bundled-workers.js";
import type { UpstreamToolSpec } from "./tools/custom/spec.js";
import { deepFreeze } from "./lib/deep-freeze.js";
import { decimal, integer } from "./lib/decimal-text.js";
import {
  ConfigError,
  isHttpUrl,
  isUrl,
  LOG_LEVELS,
  listEntries,
  schemaProblems,
  withoutBlankValues,
} from "./lib/settings.js";
import { percentDecoded, type Secret } from "./lib/redact.js";

/** The most WORKER_MAX_RESPONSE_BYTES (and its default) and UPSTREAM_MAX_RESPONSE_BYTES may be: 256 MiB. */
const WORKER_ANSWER_BYTES_CAP = 256 * 1024 * 1024;
/**
 * The longest delay a Node timer takes (2^31 − 1 ms, about 24.8 days): a longer one warns
 * (TimeoutOverflowWarning) and fires after 1 ms instead, so a duration setting past it is refused.
 */
export const TIMER_MAX_MS = 2 ** 31 - 1;
const TIMER_MAX_SECONDS = Math.floor(TIMER_MAX_MS / 1000);
/** A duration setting in whole milliseconds: at least `min`, at most a timer's longest. */
const durationMs = (min: number) => integer(min, TIMER_MAX_MS);

const isSmtpUrl = isUrl("smtp:", "smtps:");

const USD_AMOUNT = /^\d+(\.\d{1,6})?$/;
/** An e-mail address as a From carries it: a local part, @, a domain with a dot. */
const ADDRESS = String.raw`[^\s@<>()",;:\\\[\]]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+`;
/** `a@b.c`, `<a@b.c>`, `Name <a@b.c>` or `"Name, Inc." <a@b.c>` (an unquoted comma would make two addresses). */
const MAIL_FROM_FORM = new RegExp(
  String.raw`^(?:${ADDRESS}|(?:(?:"[^"\r\n]*"|[^<>",;@\r\n]+)\s*)?<${ADDRESS}>)$`,
);
const isMailFrom = (value: string): boolean => MAIL_FROM_FORM.test(value.trim());

/**
 * A URL's authority and what follows it as written, not as the URL parser rewrites them: split at
 * the first `/`, `\`, `?` or `#` after the scheme and its slashes.
 */
const writtenParts = (value: string): { authority: string; rest: string } => {
  const afterScheme = value.slice(new URL(value).protocol.length).replace(/^[/\\]*/, "");
  const end = afterScheme.search(/[/\\?#]/);
  return end < 0
    ? { authority: afterScheme, rest: "" }
    : { authority: afterScheme.slice(0, end), rest: afterScheme.slice(end) };
};

/**
 * Whether a URL is written with user:password@ (even an empty one), a query or a fragment. `?`
 * and `#` are looked for in the text: `https://host/?` parses with an empty query.
 */
const hasUserinfoQueryOrFragment = (value: string): boolean =>
  writtenParts(value).authority.includes("@") || value.includes("?") || value.includes("#");

/**
 * An http(s) URL setting that other URLs are built from; the messages name the form, never the
 * value (it can hold a password). `base`: links are built on it (PUBLIC_BASE_URL + a path), so it
 * may have a path, and nothing after one: a query or fragment would end up inside every link, and
 * user:password@ be published in them. `origin`: only its origin is used (a worker pool's calls
 * go to the origin; its health check appended a path to the whole text), so nothing else is taken.
 */
const httpUrl = (name: string, part: "base" | "origin") =>
  z
    .string()
    .refine(isHttpUrl, `${name} must be an http:// or https:// URL`)
    .refine(
      (value) =>
        !isHttpUrl(value) ||
        (!hasUserinfoQueryOrFragment(value) &&
          (part === "base" || new URL(value).pathname === "/")),
      part === "base"
        ? `${name} must not hold user:password@, a query (?) or a fragment (#): every link and document URL is built on it`
        : `${name} must be the workers' origin only (http://host:port): no user:password@, path, query or fragment`,
    )
    .refine(
      (value) =>
        part === "origin" ||
        !isHttpUrl(value) ||
        hasUserinfoQueryOrFragment(value) || // refused above
        plainPath(value),
      `${name}'s path may hold only letters, digits, -._~ and %-escapes between single slashes: every page's links, forms and redirects start with it`,
    );

/**
 * A base URL's path as pages put it before their addresses, into HTML attributes, scripts and
 * Location headers: only characters that mean the same in each (RFC 3986's unreserved and
 * %-escapes), no empty or dot segments.
 */
const PLAIN_PATH = /^(?:\/(?!\.\.?(?:\/|$))(?:[A-Za-z0-9._~-]|%[0-9A-Fa-f]{2})+)*\/?$/;
/** The path as written is one the URL parser keeps as it is (so the text and `basePath` agree). */
const plainPath = (value: string): boolean => {
  const path = new URL(value).pathname.replace(/\/$/, "");
  const written = writtenParts(value).rest.replace(/\/$/, "");
  return PLAIN_PATH.test(path) && written === path;
};

/**
 * A comma-separated list setting: its empty entries (`a.example, ,b.example,`) are ignored, as the
 * RPC URL lists' are, and a list of nothing else is refused: read as no entries, MCP_ALLOWED_HOSTS
 * refused every host without a word. (A value of only white space is unset: withoutBlankValues.)
 */
const listOf = (name: string, entries: string) =>
  z
    .string()
    .refine(
      (value) => listEntries(value).length > 0,
      `${name} must name at least one ${entries} (comma-separated)`,
    );

/** A DNS name (an optional final dot) or a bracketed IPv6 literal, as a Host header names a host. */
const HOST_NAME =
  /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.?)$/;

/**
 * The one configuration object, read from the environment once at start-up.
 * Development gets embedded defaults so `npm start` works on a fresh machine;
 * production refuses to start until every required setting is given. It parses the environment
 * without its blank values (withoutBlankValues): an empty setting is an unset one. Exported for
 * the tests, which derive their tables of settings from it.
 */
export const envSchema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  HOST: z.string().default("0.0.0.0"),
  PORT: integer(0, 65535).default(8402),
  PUBLIC_BASE_URL: httpUrl("PUBLIC_BASE_URL", "base").optional(),
  LOG_LEVEL: z.enum(LOG_LEVELS).default("info"),
  /** Unset: in-memory state (development only). */
  REDIS_URL: z
    .string()
    // The message names the form, never the value (it can hold the Redis password).
    .refine(
      isUrl("redis:", "rediss:"),
      "REDIS_URL must be redis://host:port or rediss://host:port (with user:password@ if needed)",
    )
    // A database is a number (redis://host:port/2); anything else there would be read as 0.
    .refine(
      (url) => !isUrl("redis:", "rediss:")(url) || /^\/?(\d+)?$/.test(new URL(url).pathname),
      "REDIS_URL's path must be a database number (redis://host:port/2) or nothing",
    )
    .optional(),
  /**
   * The books (ledger, request records, payments): `postgres://…` a PostgreSQL server;
   * `pglite://memory` or `pglite:///absolute/dir` PGlite in this process; `none` the books stay
   * in the store (no export). Unset: PGlite in memory without REDIS_URL (embedded), none with it.
   */
  DATABASE_URL: z
    .string()
    .regex(
      /^(postgres(ql)?:\/\/.+|pglite:\/\/memory|pglite:\/\/\/.+|none)$/,
      "DATABASE_URL must be postgres://…, pglite://memory, pglite:///absolute/dir or none",
    )
    // pg parses a postgres:// URL with `new URL` when it first connects; as it does, an empty host
    // (`postgres://user@/db?host=/var/run/postgresql`, a Unix socket) is read with a stand-in.
    .refine(
      (v) => !v.startsWith("postgres") || URL.canParse(v.replace("@/", "@socket/")),
      "DATABASE_URL must be postgres://user:password@host:port/database (a URL)",
    )
    .optional(),
  /** `0`: this process does not export (it still serves, and reads the books); another process must. */
  BOOKS_EXPORT: z.enum(["0", "1"]).default("1"),
  BOOKS_EXPORT_INTERVAL_MS: durationMs(10).default(1000),
  BOOKS_EXPORT_BATCH: integer(1, 5000).default(500),
  /** A shard's export lease: how long a process that died holding it delays that shard's export. */
  BOOKS_EXPORT_LEASE_MS: durationMs(100).default(30_000),
  BOOKS_EXPORT_SHARDS: integer(1, 1024).default(16),
  /** The status page shows the books export degraded once its lag passes this. */
  BOOKS_EXPORT_DEGRADED_AFTER_SECONDS: decimal(0.1, TIMER_MAX_SECONDS).default(60),
  /** `1`: REDIS_URL is one node of a Redis Cluster. */
  REDIS_CLUSTER: z.enum(["0", "1"]).default("0"),
  /** Namespace for every Redis key, so several deployments (or test runs) can share one Redis. No braces: they would break the keys' hash tags. */
  REDIS_KEY_PREFIX: z
    .string()
    .regex(/^[^{}]*$/, "REDIS_KEY_PREFIX must not contain { or }")
    .default("tg:"),
  // Trimmed as SECRET_KEY's keys are (a header's value loses its surrounding spaces too): a key of
  // spaces is no key.
  ADMIN_API_KEY: z
    .string()
    .trim()
    .min(24, "ADMIN_API_KEY must be at least 24 characters (not counting surrounding spaces)")
    .optional(),
  /**
   * Seals webhook secrets and signs e-mailed links. A comma-separated list rotates it: the
   * first key seals and signs, every key opens and verifies.
   */
  SECRET_KEY: z
    .string()
    .refine(
      (v) => v.split(",").every((key) => key.trim().length >= 32),
      "SECRET_KEY must be at least 32 characters (each key of a comma-separated list)",
    )
    .optional(),
  /** smtp(s)://user:pass@host:port — unset: e-mails are written to the log (development only). */
  SMTP_URL: z
    .string()
    // Checked here, not at the first e-mail: nodemailer takes any string and fails only when
    // sending, so a typo let every sign-up through without its verification e-mail. The message
    // names the form, never the value (it can hold the SMTP password).
    .refine(
      isSmtpUrl,
      "SMTP_URL must be smtp://host:port or smtps://host:port (with user:password@ if needed)",
    )
    .optional(),
  /** The From of every e-mail: an address, or a name and an address (required in production). */
  MAIL_FROM: z
    .string()
    // nodemailer sends whatever it is given, and a From without an address is refused or
    // filed as spam by the receiving servers: every sign-up's verification e-mail lost.
    .refine(isMailFrom, "MAIL_FROM must be an address: a@example.com or Name <a@example.com>")
    .default("Toolgate <no-reply@toolgate.local>"),
  BODY_LIMIT_BYTES: integer(
    MIN_BODY_LIMIT_BYTES,
    undefined,
    `BODY_LIMIT_BYTES must be at least ${MIN_BODY_LIMIT_BYTES}: tools take texts of up to ${MAX_TEXT_CHARS} characters`,
  ).default(MIN_BODY_LIMIT_BYTES),
  /** How deeply arrays and objects may nest in a JSON body (413 body_too_deep beyond). */
  BODY_MAX_DEPTH: integer(2, 1000).default(64),
  SIGNUPS_PER_HOUR_PER_IP: integer(1).default(5),
  /** Overrides of the per-address and per-account endpoint limits (src/http/endpoint-limits.ts): `name=calls/seconds,…`. */
  ENDPOINT_LIMITS: z
    .string()
    .regex(ENDPOINT_LIMITS_PATTERN, "name=calls/seconds pairs separated by commas")
    .optional(),
  /** Seconds to wait for in-flight requests on SIGTERM before closing anyway. */
  SHUTDOWN_GRACE_SECONDS: integer(0, TIMER_MAX_SECONDS).default(10),
  /**
   * Seconds between SIGTERM and closing the listener, during which /readyz answers 503 while every
   * other request is still served: a load balancer stops sending new requests before they could be
   * refused. 0 (alone, with no load balancer to tell): the listener closes at once.
   */
  SHUTDOWN_DELAY_SECONDS: integer(0, TIMER_MAX_SECONDS).default(0),
  /** Seed (or, with Redis, reuse) a development account and print its key (default: on in development). */
  DEV_SEED: z.enum(["0", "1"]).optional(),
  /** Development with no X402_NETWORKS: start a local anvil chain standing in for base-sepolia (default on). */
  DEV_CHAIN: z.enum(["0", "1"]).optional(),
  /** Gateway processes serving one port (node:cluster); above 1 needs REDIS_URL, the state they share. */
  WEB_CONCURRENCY: integer(1, 64).default(1),
  /**
   * The proxies whose X-Forwarded-For is believed: their addresses or subnets (comma-separated;
   * also `loopback`, `linklocal`, `uniquelocal`), or a hop count. Unset: none — the client is the
   * peer of the TCP connection. Never "any": a client could then pick its own address.
   */
  TRUST_PROXY: z.string().optional(), // checked by trustProxySetting
  /** Tool workers for every pool; unset: the gateway starts the bundled workers itself. */
  WORKERS_URL: httpUrl("WORKERS_URL", "origin").optional(),
  WORKER_POOL_GENERAL_URL: httpUrl("WORKER_POOL_GENERAL_URL", "origin").optional(),
  WORKER_POOL_PROVIDER_URL: httpUrl("WORKER_POOL_PROVIDER_URL", "origin").optional(),
  WORKER_POOL_HEAVY_URL: httpUrl("WORKER_POOL_HEAVY_URL", "origin").optional(),
  /** Calls in flight per worker pool and gateway process; more wait in the priority queue. */
  POOL_CONCURRENCY: integer(1).default(64),
  POOL_QUEUE_TIMEOUT_MS: durationMs(1).default(10_000),
  /** Heavy calls (OCR, charts, sandboxed code) in flight per gateway process; the workers' own thread pool bounds them again. */
  HEAVY_POOL_CONCURRENCY: integer(1).default(8),
  /**
   * The largest answer a tool worker (shared or dedicated) may send; a larger one fails the call,
   * refunded. At most 256 MiB: the answer is kept as one string, and V8's longest is ~512 MiB.
   */
  WORKER_MAX_RESPONSE_BYTES: integer(1024, WORKER_ANSWER_BYTES_CAP).default(
    WORKER_ANSWER_BYTES_CAP,
  ),
  /** Per-tool timeout overrides: `ai-generate=30000,web-search=5000`. */
  TOOL_TIMEOUTS: z
    .string()
    .regex(/^([a-z0-9-]+=\d+)(,[a-z0-9-]+=\d+)*$/, "name=milliseconds pairs separated by commas")
    .optional(),
  /** USD price of one credit (decisions.md D2). */
  CREDIT_PRICE_USD: z
    .string()
    .regex(
      USD_AMOUNT,
      "CREDIT_PRICE_USD must be a USD amount above 0 with at most 6 decimals, e.g. 0.002",
    )
    // At 0 every price is 0: keyless x402 calls and credit packs free. Anything above 0 is at
    // least 0.000001, one USDC atomic unit, so no price in credits rounds to nothing.
    .refine(
      (v) => !USD_AMOUNT.test(v) || parseUsd(v) > 0n,
      "CREDIT_PRICE_USD must be more than 0 (at least 0.000001, one USDC atomic unit): at 0 every x402 price and credit pack is free",
    )
    .default("0.002"),
  /** Credits charged per x402 facilitator settlement (covers the relayer's gas): 5 credits = $0.01 at the default price. */
  FACILITATOR_FEE_CREDITS: integer(0).default(5),
  IDEMPOTENCY_TTL_SECONDS: integer(60).default(86_400),
  /**
   * The most bytes of answers one account may have kept for Idempotency-Key replays at once: an
   * answer past it is served but not kept (a retry with its key is 409 idempotency_answer_not_kept).
   * Without it, 1 MB answers at a credit each held a megabyte of Redis per credit for a day.
   */
  IDEMPOTENCY_KEPT_BYTES: integer(0).default(32 * 1024 * 1024),
  /** Host names /mcp answers to (DNS-rebinding protection); default: PUBLIC_BASE_URL's host and loopback. */
  // Host names as the Host header carries them, less its port (mcp/route.ts): an entry with a
  // scheme, a port or a path could never match, and MCP refused that host without a word.
  MCP_ALLOWED_HOSTS: listOf("MCP_ALLOWED_HOSTS", "host name")
    .refine(
      (value) => listEntries(value).every((entry) => HOST_NAME.test(entry)),
      "MCP_ALLOWED_HOSTS takes host names only (gw.example.com, [::1]): no scheme, port or path",
    )
    .optional(),
  /** Development and tests only: let webhooks target loopback and private networks (HTTPS still required). */
  WEBHOOK_ALLOW_PRIVATE_TARGETS: z.enum(["0", "1"]).default("0"),
  WEBHOOKS_PER_ACCOUNT: integer(1, 100).default(10),
  /** How many live (not revoked) API keys one account may hold: the key list is not paginated. */
  KEYS_PER_ACCOUNT: integer(1, 1000).default(100),
  /** The operator's upstream tools (YAML or JSON; src/tools/custom/tools-file.ts): public, paid like catalogue tools. */
  TOOLS_FILE: z.string().min(1).optional(),
  /** Development and tests only: let custom and upstream tools target loopback and private networks, and plain http to loopback. */
  UPSTREAM_ALLOW_PRIVATE_TARGETS: z.enum(["0", "1"]).default("0"),
  /**
   * The largest answer a custom or upstream tool's endpoint may send. At most 256 MiB, as for the
   * workers: the answer is read whole and parsed as one string (V8's longest is ~512 MiB), so a
   * larger limit let one answer fail the call with a 500 or exhaust the process's memory.
   */
  UPSTREAM_MAX_RESPONSE_BYTES: integer(1024, WORKER_ANSWER_BYTES_CAP).default(1024 * 1024),
  /** How many custom tools one Business account may register. */
  CUSTOM_TOOLS_PER_ACCOUNT: integer(1, 1000).default(50),
  /** Development and tests only: let an SSO issuer (a Business account's identity provider) be on loopback or a private network (HTTPS still required). */
  SSO_ALLOW_PRIVATE_TARGETS: z.enum(["0", "1"]).default("0"),
  /** Development and tests only: let a Business account's dedicated workers be on loopback or a private network, over plain HTTP. */
  DEDICATED_WORKERS_ALLOW_PRIVATE_TARGETS: z.enum(["0", "1"]).default("0"),
  /** x402: comma-separated networks (base, base-sepolia, polygon, polygon-amoy); unset: no x402. */
  X402_NETWORKS: listOf("X402_NETWORKS", "network").optional(),
  X402_PAY_TO: z
    .string()
    .regex(/^0x[0-9a-fA-F]{40}$/, "an EVM address")
    .optional(),
  X402_RELAYER_PRIVATE_KEY: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/, "a 32-byte hex private key")
    .optional(),
  /** A relayer pool: several keys, comma-separated, each with its own nonce sequence; settlements spread over them. */
  X402_RELAYER_PRIVATE_KEYS: z
    .string()
    .regex(
      /^0x[0-9a-fA-F]{64}(\s*,\s*0x[0-9a-fA-F]{64})*$/,
      "32-byte hex private keys separated by commas",
    )
    .optional(),
  /** Chain reads made together go to the RPC as one JSON-RPC batch of at most this many calls; 0 sends each alone. */
  X402_RPC_BATCH_SIZE: integer(0, 1000).default(100),
  /**
   * At most this many settlement sends wait for their receipt in the send at once (EIP-7966
   * eth_sendRawTransactionSync, where the RPC has it); more are sent, then their receipts read
   * together. 0: never.
   */
  X402_SEND_SYNC: integer(0, 1000).default(8),
  /** How long a payment authorization may stay valid (and the receipt wait bound). */
  X402_MAX_TIMEOUT_SECONDS: integer(10, 3600).default(300),
  X402_RECEIPT_TIMEOUT_MS: durationMs(100).default(30_000),
  /** One chain RPC request's time limit: a silent RPC must surface quickly. */
  X402_RPC_TIMEOUT_MS: durationMs(100).default(10_000),
  /** How often to poll the chain for new blocks while waiting for a receipt. */
  X402_POLL_MS: durationMs(10).default(100),
  /**
   * Batch settlement (group commit): a payment that reaches settlement while no other is being
   * verified is sent at once; one that finds others being verified waits for them, this many ms
   * at the most, and those gathered are settled in one Multicall3 transaction (aggregate3, each
   * transfer allowed to fail alone); 0 sends each alone.
   */
  X402_BATCH_WINDOW_MS: integer(0, 5_000).default(5),
  /** The most transfers one batch transaction carries (a full batch is sent at once). */
  X402_BATCH_MAX: integer(1, 500).default(50),
  /** A settlement transaction not mined after this long is replaced with higher fees (same nonce). */
  X402_STUCK_AFTER_MS: durationMs(100).default(60_000),
  /**
   * How long a settled payment's record (and its paid call's answer) is kept for retries of the
   * same payment: this long, or until the authorization expires, whichever is later.
   */
  X402_PAYMENT_RETENTION_SECONDS: integer(60).default(24 * 3600),
  /** The widest block range one eth_getLogs request may ask for (hosted RPCs cap it). */
  X402_LOG_RANGE_BLOCKS: integer(1).default(1_000),
  /** Length of a paid plan's period (30 days). */
  PLAN_PERIOD_SECONDS: integer(1).default(30 * 24 * 3600),
  /** How long a client may take to send its headers, and its whole request. */
  HEADERS_TIMEOUT_MS: durationMs(100).default(10_000),
  REQUEST_TIMEOUT_MS: durationMs(100).default(30_000),
  /** How long an answer may wait on a client that stopped reading it (src/http/stalled-readers.ts). */
  SEND_TIMEOUT_MS: durationMs(100).default(30_000),
  /** If set, GET /metrics requires `Authorization: Bearer <token>`. */
  METRICS_TOKEN: z
    .string()
    .trim()
    .min(16, "METRICS_TOKEN must be at least 16 characters (not counting surrounding spaces)")
    .optional(),
  /** The API versions as JSON (see src/http/versioning.ts); unset: the table in the code. */
  API_VERSIONS: z.string().optional(),
  /** How often each process checks the status page's components. */
  STATUS_CHECK_INTERVAL_MS: durationMs(50).default(30_000),
  /** A dashboard session ends after this long unused… */
  DASHBOARD_SESSION_IDLE_MINUTES: decimal(0.01, 7 * 24 * 60).default(30),
  /** …and after this long in any case (absolute expiry). */
  DASHBOARD_SESSION_MAX_HOURS: decimal(0.0001, 30 * 24).default(12),
  /** How long an e-mailed dashboard sign-in link works (single use). */
  DASHBOARD_SIGN_IN_LINK_MINUTES: decimal(1, 24 * 60).default(15),
  /** Live feed streams (Server-Sent Events) held open per gateway process; each holds one Redis connection. */
  DASHBOARD_LIVE_STREAMS: integer(1, 10_000).default(200),
});

/** Settings production must be given explicitly: no embedded default is safe there. */
const REQUIRED_IN_PRODUCTION = [
  "REDIS_URL",
  "ADMIN_API_KEY",
  "SECRET_KEY",
  "PUBLIC_BASE_URL",
  "SMTP_URL",
  "MAIL_FROM",
] as const;

export interface Config {
  env: "development" | "production" | "test";
  host: string;
  port: number;
  publicBaseUrl: string;
  /**
   * PUBLIC_BASE_URL's path ("" at the root, else like "/toolgate", no trailing slash). A reverse
   * proxy that serves the gateway there strips it, so routes stay mounted at /; but the browser
   * sees it, so every address a page, a script or a redirect hands the browser starts with it.
   */
  basePath: string;
  logLevel: string;
  redisUrl: string | undefined;
  redisKeyPrefix: string;
  redisCluster: boolean;
  /** The books' database and its exporter's settings; null: the books stay in the store. */
  books: {
    url: string;
    exportEnabled: boolean;
    intervalMs: number;
    batchSize: number;
    leaseMs: number;
    shards: number;
    degradedAfterMs: number;
  } | null;
  adminApiKey: string | undefined;
  /**
   * The first seals and signs; all open and verify. Empty until start-up when SECRET_KEY is
   * unset (development): then one key is kept in the store, shared by every process.
   */
  secretKeys: string[];
  smtpUrl: string | undefined;
  mailFrom: string;
  bodyLimitBytes: number;
  bodyMaxDepth: number;
  signupsPerHourPerIp: number;
  endpointLimits: EndpointLimits;
  shutdownGraceMs: number;
  shutdownDelayMs: number;
  devSeed: boolean;
  devChain: boolean;
  webConcurrency: number;
  /** Express's `trust proxy`: false (no proxy), the trusted addresses, or a hop count. */
  trustProxy: false | string | number;
  workers: { general: string | undefined; provider: string | undefined; heavy: string | undefined };
  poolConcurrency: number;
  heavyPoolConcurrency: number;
  workerMaxResponseBytes: number;
  poolQueueTimeoutMs: number;
  toolTimeouts: Record<string, number>;
  creditPriceAtomic: bigint;
  facilitatorFeeCredits: number;
  idempotencyTtlSeconds: number;
  idempotencyKeptBytes: number;
  planPeriodMs: number;
  metricsToken: string | undefined;
  apiVersions: ApiVersion[];
  statusCheckIntervalMs: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  sendTimeoutMs: number;
  mcpAllowedHosts: string[];
  webhookAllowPrivateTargets: boolean;
  dedicatedWorkersAllowPrivateTargets: boolean;
  /** SSO issuers (and every request to them) may be on loopback or private networks: development and tests only. */
  ssoAllowPrivateTargets: boolean;
  webhooksPerAccount: number;
  keysPerAccount: number;
  /** Custom (per-account) and operator-declared tools at HTTP endpoints (src/tools/custom). */
  upstream: {
    tools: UpstreamToolSpec[];
    allowPrivate: boolean;
    maxResponseBytes: number;
    perAccount: number;
  };
  dashboard: {
    sessionIdleMs: number;
    sessionMaxMs: number;
    signInLinkMs: number;
    liveStreams: number;
  };
  /**
   * How x402 payments are verified and settled (the X402_* tuning variables), read whether or not
   * X402_NETWORKS is set: the development chain started later uses them too.
   */
  x402Tuning: PaymentTuning;
  x402:
    | ({
        networks: PaymentNetwork[];
        payTo: Address;
        /** One or more relayer keys (X402_RELAYER_PRIVATE_KEYS, or X402_RELAYER_PRIVATE_KEY alone), without repeats. */
        relayerKeys: Hex[];
      } & PaymentTuning)
    | null;
}

export interface PaymentTuning {
  rpcBatchSize: number;
  /** How many settlement sends may wait for their receipt at once (X402_SEND_SYNC; 0: none). */
  sendSync: number;
  maxTimeoutSeconds: number;
  receiptTimeoutMs: number;
  rpcTimeoutMs: number;
  pollMs: number;
  batchWindowMs: number;
  batchMax: number;
  stuckAfterMs: number;
  retentionSeconds: number;
  logRangeBlocks: number;
}

/** The gateway's refusal of its settings, shared with the workers' (lib/settings.ts). */
export { ConfigError };

/**
 * Settings whose empty value means something of its own, unlike every other's: REDIS_KEY_PREFIX=
 * is no prefix (one deployment alone on its Redis); read as its default, `tg:`, it would move
 * every key that deployment kept.
 */
const EMPTY_IS_A_VALUE = new Set(["REDIS_KEY_PREFIX"]);

/** Each worker pool's URL: its own setting, else WORKERS_URL; unset, the bundled workers serve it. */
const poolUrls = (e: z.infer<typeof envSchema>) => ({
  general: e.WORKER_POOL_GENERAL_URL ?? e.WORKERS_URL,
  provider: e.WORKER_POOL_PROVIDER_URL ?? e.WORKERS_URL,
  heavy: e.WORKER_POOL_HEAVY_URL ?? e.WORKERS_URL,
});

/**
 * PUBLIC_BASE_URL as links are built on it (as the operator wrote it, no trailing slash: it is the
 * text an SSO provider has registered as the redirect URI's base, compared exactly) and its path
 * alone (`basePath`, "" at the root), which the settings' check holds to the same text.
 */
function publicBase(value: string): { publicBaseUrl: string; basePath: string } {
  return {
    publicBaseUrl: value.replace(/\/$/, ""),
    basePath: new URL(value).pathname.replace(/\/$/, ""),
  };
}

export function loadConfig(given: NodeJS.ProcessEnv = process.env): Config {
  const env = withoutBlankValues(given, EMPTY_IS_A_VALUE);
  const parsed = envSchema.safeParse(env);
  const problems: string[] = parsed.success ? [] : schemaProblems(parsed.error);
  if (parsed.success && parsed.data.NODE_ENV === "production") {
    for (const name of REQUIRED_IN_PRODUCTION) {
      if (!env[name]) problems.push(`${name} is required when NODE_ENV=production`);
    }
    if (parsed.data.WEBHOOK_ALLOW_PRIVATE_TARGETS === "1")
      problems.push("WEBHOOK_ALLOW_PRIVATE_TARGETS=1 is refused when NODE_ENV=production");
    if (parsed.data.UPSTREAM_ALLOW_PRIVATE_TARGETS === "1")
      problems.push("UPSTREAM_ALLOW_PRIVATE_TARGETS=1 is refused when NODE_ENV=production");
    if (parsed.data.SSO_ALLOW_PRIVATE_TARGETS === "1")
      problems.push("SSO_ALLOW_PRIVATE_TARGETS=1 is refused when NODE_ENV=production");
    if (parsed.data.DEDICATED_WORKERS_ALLOW_PRIVATE_TARGETS === "1")
      problems.push(
        "DEDICATED_WORKERS_ALLOW_PRIVATE_TARGETS=1 is refused when NODE_ENV=production",
      );
    // The bundled workers this gateway starts inherit its environment, and read this setting: it
    // is refused here, at once, as they refuse it themselves (workers/config.ts), rather than in
    // their failed start. Workers of their own (a URL for every pool) read their own environment.
    if (env.WEB_ALLOW_PRIVATE_TARGETS === "1" && needsBundledWorkers(poolUrls(parsed.data)))
      problems.push(
        "WEB_ALLOW_PRIVATE_TARGETS=1 is refused when NODE_ENV=production (the bundled tool workers read it)",
      );
    // The development account's id and key derive from SECRET_KEY, and the banner prints the key.
    if (parsed.data.DEV_SEED === "1")
      problems.push("DEV_SEED=1 is refused when NODE_ENV=production");
  }
  // Whoever learns one key must not hold the other: the admin key opens every account, the
  // secret key seals webhook secrets and signs links.
  if (
    parsed.success &&
    parsed.data.ADMIN_API_KEY !== undefined &&
    parsed.data.SECRET_KEY?.split(",").some((key) => key.trim() === parsed.data.ADMIN_API_KEY)
  )
    problems.push(
      "ADMIN_API_KEY must not be one of the SECRET_KEY keys: set each to its own value",
    );
  const trustProxy =
    parsed.success && parsed.data.TRUST_PROXY !== undefined
      ? trustProxySetting(parsed.data.TRUST_PROXY, problems)
      : false;
  // Node's HTTP server throws (a RangeError, with its stack) when given these the other way round.
  if (parsed.success && parsed.data.HEADERS_TIMEOUT_MS > parsed.data.REQUEST_TIMEOUT_MS)
    problems.push(
      `HEADERS_TIMEOUT_MS (${parsed.data.HEADERS_TIMEOUT_MS}) must not exceed REQUEST_TIMEOUT_MS (${parsed.data.REQUEST_TIMEOUT_MS}): the headers are part of the request`,
    );
  if (
    parsed.success &&
    parsed.data.REDIS_CLUSTER === "1" &&
    parsed.data.REDIS_URL &&
    Number(new URL(parsed.data.REDIS_URL).pathname.slice(1) || 0) !== 0
  )
    problems.push(
      "REDIS_URL names a database other than 0, and a Redis Cluster has only database 0 (REDIS_CLUSTER=1)",
    );
  if (parsed.success && parsed.data.WEB_CONCURRENCY > 1 && !parsed.data.REDIS_URL)
    problems.push(
      "WEB_CONCURRENCY above 1 needs REDIS_URL: the gateway processes share their state through Redis",
    );
  if (
    parsed.success &&
    parsed.data.WEB_CONCURRENCY > 1 &&
    parsed.data.DATABASE_URL?.startsWith("pglite:")
  )
    problems.push(
      "WEB_CONCURRENCY above 1 needs a PostgreSQL server in DATABASE_URL: PGlite is one process's database",
    );
  const x402 = parsed.success ? paymentConfig(parsed.data, env, problems) : null;
  const limits = endpointLimits(parsed.success ? parsed.data.ENDPOINT_LIMITS : undefined, problems);
  const apiVersions = parsed.success ? versionsConfig(parsed.data.API_VERSIONS, problems) : null;
  const upstreamTools =
    parsed.success && parsed.data.TOOLS_FILE
      ? loadToolsFile(
          parsed.data.TOOLS_FILE,
          env,
          parsed.data.UPSTREAM_ALLOW_PRIVATE_TARGETS === "1",
          problems,
        )
      : [];
  const toolTimeouts = toolTimeoutsSetting(
    parsed.success ? parsed.data.TOOL_TIMEOUTS : undefined,
    upstreamTools,
    problems,
  );
  if (problems.length > 0 || !parsed.success) throw new ConfigError(problems);
  const e = parsed.data;
  // Frozen: settings are read everywhere; start-up derives a new configuration rather than editing this one.
  return deepFreeze({
    env: e.NODE_ENV,
    host: e.HOST,
    port: e.PORT,
    ...publicBase(e.PUBLIC_BASE_URL ?? `http://localhost:${e.PORT}`),
    logLevel: e.LOG_LEVEL,
    redisUrl: e.REDIS_URL,
    redisKeyPrefix: e.REDIS_KEY_PREFIX,
    redisCluster: e.REDIS_CLUSTER === "1",
    books: booksConfig(e),
    adminApiKey: e.ADMIN_API_KEY,
    secretKeys: e.SECRET_KEY?.split(",").map((key) => key.trim()) ?? [],
    smtpUrl: e.SMTP_URL,
    mailFrom: e.MAIL_FROM,
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    bodyMaxDepth: e.BODY_MAX_DEPTH,
    signupsPerHourPerIp: e.SIGNUPS_PER_HOUR_PER_IP,
    endpointLimits: limits,
    shutdownGraceMs: e.SHUTDOWN_GRACE_SECONDS * 1000,
    shutdownDelayMs: e.SHUTDOWN_DELAY_SECONDS * 1000,
    devSeed: e.DEV_SEED ? e.DEV_SEED === "1" : e.NODE_ENV === "development",
    devChain: e.NODE_ENV === "development" && !e.X402_NETWORKS && e.DEV_CHAIN !== "0",
    webConcurrency: e.WEB_CONCURRENCY,
    trustProxy,
    workers: poolUrls(e),
    poolConcurrency: e.POOL_CONCURRENCY,
    heavyPoolConcurrency: e.HEAVY_POOL_CONCURRENCY,
    workerMaxResponseBytes: e.WORKER_MAX_RESPONSE_BYTES,
    poolQueueTimeoutMs: e.POOL_QUEUE_TIMEOUT_MS,
    toolTimeouts,
    creditPriceAtomic: parseUsd(e.CREDIT_PRICE_USD),
    facilitatorFeeCredits: e.FACILITATOR_FEE_CREDITS,
    idempotencyTtlSeconds: e.IDEMPOTENCY_TTL_SECONDS,
    idempotencyKeptBytes: e.IDEMPOTENCY_KEPT_BYTES,
    planPeriodMs: e.PLAN_PERIOD_SECONDS * 1000,
    metricsToken: e.METRICS_TOKEN,
    apiVersions: apiVersions!,
    statusCheckIntervalMs: e.STATUS_CHECK_INTERVAL_MS,
    headersTimeoutMs: e.HEADERS_TIMEOUT_MS,
    requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
    sendTimeoutMs: e.SEND_TIMEOUT_MS,
    mcpAllowedHosts: e.MCP_ALLOWED_HOSTS
      ? listEntries(e.MCP_ALLOWED_HOSTS).map((host) => host.toLowerCase())
      : [
          ...new Set([
            new URL(e.PUBLIC_BASE_URL ?? "http://localhost").hostname,
            "localhost",
            "127.0.0.1",
            "[::1]",
          ]),
        ],
    webhookAllowPrivateTargets: e.WEBHOOK_ALLOW_PRIVATE_TARGETS === "1",
    webhooksPerAccount: e.WEBHOOKS_PER_ACCOUNT,
    keysPerAccount: e.KEYS_PER_ACCOUNT,
    upstream: {
      tools: upstreamTools,
      allowPrivate: e.UPSTREAM_ALLOW_PRIVATE_TARGETS === "1",
      maxResponseBytes: e.UPSTREAM_MAX_RESPONSE_BYTES,
      perAccount: e.CUSTOM_TOOLS_PER_ACCOUNT,
    },
    dashboard: {
      sessionIdleMs: Math.round(e.DASHBOARD_SESSION_IDLE_MINUTES * 60_000),
      sessionMaxMs: Math.round(e.DASHBOARD_SESSION_MAX_HOURS * 3_600_000),
      signInLinkMs: Math.round(e.DASHBOARD_SIGN_IN_LINK_MINUTES * 60_000),
      liveStreams: e.DASHBOARD_LIVE_STREAMS,
    },
    dedicatedWorkersAllowPrivateTargets: e.DEDICATED_WORKERS_ALLOW_PRIVATE_TARGETS === "1",
    ssoAllowPrivateTargets: e.SSO_ALLOW_PRIVATE_TARGETS === "1",
    x402Tuning: paymentTuning(e),
    x402,
  });
}

/** The books' database: as DATABASE_URL says; unset, PGlite in memory for the embedded (in-memory) store and none beside Redis. */
/**
 * TOOL_TIMEOUTS by tool: each name a catalogue tool (an alias stands for its tool) or one of
 * TOOLS_FILE's, each timeout 1 ms to a Node timer's longest. A misspelt name would be ignored,
 * and 0 or a timer's overflow would time every call of the tool out at once (504).
 */
function toolTimeoutsSetting(
  value: string | undefined,
  upstream: readonly UpstreamToolSpec[],
  problems: string[],
): Record<string, number> {
  const timeouts: Record<string, number> = {};
  for (const pair of value?.split(",") ?? []) {
    const [given, ms] = pair.split("=") as [string, string];
    const name = findTool(given)?.name ?? upstream.find((tool) => tool.name === given)?.name;
    const timeout = Number(ms);
    if (!name) problems.push(`TOOL_TIMEOUTS: no tool is named ${given}`);
    else if (timeout < 1 || timeout > TIMER_MAX_MS)
      problems.push(`TOOL_TIMEOUTS: ${given}'s timeout must be 1 to ${TIMER_MAX_MS} ms`);
    else timeouts[name] = timeout;
  }
  return timeouts;
}

function booksConfig(e: z.infer<typeof envSchema>): Config["books"] {
  const url = e.DATABASE_URL ?? (e.REDIS_URL ? "none" : "pglite://memory");
  if (url === "none") return null;
  return {
    url,
    exportEnabled: e.BOOKS_EXPORT === "1",
    intervalMs: e.BOOKS_EXPORT_INTERVAL_MS,
    batchSize: e.BOOKS_EXPORT_BATCH,
    leaseMs: e.BOOKS_EXPORT_LEASE_MS,
    shards: e.BOOKS_EXPORT_SHARDS,
    degradedAfterMs: e.BOOKS_EXPORT_DEGRADED_AFTER_SECONDS * 1000,
  };
}

const PROXY_NAMES = new Set(["loopback", "linklocal", "uniquelocal"]);

/**
 * The widest subnet TRUST_PROXY may name. A proxy fleet lives in one network: the largest private
 * IPv4 block is a /8 (10.0.0.0/8), and a /32 is a whole ISP's IPv6 allocation. Anything wider is
 * most of the Internet (0.0.0.0/1 and 128.0.0.0/1 together are all of it): its X-Forwarded-For
 * would be believed from any client, who then picks its own address past every per-address limit.
 */
const WIDEST_PREFIX = { ipv4: 8, ipv6: 32 } as const;

/** Every IPv4 client, as a server listening on `::` sees it: an IPv6 range holding it trusts them all. */
const IPV4_MAPPED = ipaddr.parse("::ffff:0.0.0.0");

/**
 * TRUST_PROXY as Express takes it; false with a problem added when refused. Each entry is parsed
 * here as strictly as proxy-addr (Express's) does, or stricter: an entry it cannot parse threw
 * only when the app was built, after the workers started.
 */
function trustProxySetting(value: string, problems: string[]): false | string | number {
  const v = value.trim();
  if (v === "" || v === "none" || v === "false") return false;
  if (/^\d+$/.test(v)) return Number(v);
  const entries = v.split(",").map((entry) => entry.trim());
  for (const entry of entries) {
    if (PROXY_NAMES.has(entry)) continue;
    const refusal = proxyEntryRefusal(entry);
    if (refusal) {
      problems.push(`TRUST_PROXY: ${refusal}`);
      return false;
    }
  }
  return entries.join(",");
}

/** Why one TRUST_PROXY entry (an address or a subnet) is refused; null when it is not. */
function proxyEntryRefusal(entry: string): string | null {
  const [address = "", prefix, ...rest] = entry.split("/");
  // Four decimal parts only: ipaddr.js 2 also takes shorthands such as `127.1`, which proxy-addr refuses.
  const ip =
    ipaddr.IPv4.isValidFourPartDecimal(address) || ipaddr.IPv6.isValid(address)
      ? ipaddr.parse(address)
      : null;
  const bits = ip?.kind() === "ipv4" ? 32 : 128;
  if (!ip || rest.length > 0 || (prefix !== undefined && !/^\d{1,3}$/.test(prefix)))
    return `TRUST_PROXY must list the proxies' addresses or subnets (or loopback, linklocal, uniquelocal), or a hop count, never "true" (trust anyone): ${JSON.stringify(entry)} is none of those`;
  const length = prefix === undefined ? bits : Number(prefix);
  if (length > bits)
    return `${entry} has no valid prefix length (1 to ${bits} for an IPv${bits === 32 ? 4 : 6} subnet)`;
  const tooWide = `${entry} is too wide for a proxy's network (at most /${WIDEST_PREFIX.ipv4} for IPv4, /${WIDEST_PREFIX.ipv6} for IPv6): any client could set its own address`;
  if (ip.kind() === "ipv4") return length < WIDEST_PREFIX.ipv4 ? tooWide : null;
  const v6 = ip as ipaddr.IPv6;
  // IPv4-mapped (::ffff:a.b.c.d/n) is an IPv4 subnet; a wider IPv6 range holding all of them trusts every IPv4 client.
  if (v6.isIPv4MappedAddress() && length >= 96)
    return length - 96 < WIDEST_PREFIX.ipv4 ? tooWide : null;
  if (length <= 96 && IPV4_MAPPED.match(v6, length)) return tooWide;
  return length < WIDEST_PREFIX.ipv6 ? tooWide : null;
}

function paymentConfig(
  e: z.infer<typeof envSchema>,
  env: NodeJS.ProcessEnv,
  problems: string[],
): Config["x402"] {
  if (!e.X402_NETWORKS) return null;
  const names = listEntries(e.X402_NETWORKS);
  const networks: PaymentNetwork[] = [];
  for (const name of names) {
    if (!(NETWORK_NAMES as string[]).includes(name))
      problems.push(`X402_NETWORKS: unknown network ${name} (known: ${NETWORK_NAMES.join(", ")})`);
    else {
      const network = networkFromEnv(name as NetworkName, env, problems);
      if (network) networks.push(network);
    }
  }
  if (!e.X402_PAY_TO) problems.push("X402_PAY_TO is required when X402_NETWORKS is set");
  const relayerKeys = [
    ...new Set(
      [...(e.X402_RELAYER_PRIVATE_KEYS?.split(",") ?? []), e.X402_RELAYER_PRIVATE_KEY ?? ""]
        .map((k) => k.trim().toLowerCase())
        .filter(Boolean),
    ),
  ] as Hex[];
  if (relayerKeys.length === 0)
    problems.push(
      "X402_RELAYER_PRIVATE_KEY (or X402_RELAYER_PRIVATE_KEYS) is required when X402_NETWORKS is set",
    );
  if (!e.X402_PAY_TO || relayerKeys.length === 0) return null;
  return {
    networks,
    payTo: e.X402_PAY_TO as Address,
    relayerKeys,
    ...paymentTuning(e),
  };
}

function paymentTuning(e: z.infer<typeof envSchema>): PaymentTuning {
  return {
    rpcBatchSize: e.X402_RPC_BATCH_SIZE,
    sendSync: e.X402_SEND_SYNC,
    maxTimeoutSeconds: e.X402_MAX_TIMEOUT_SECONDS,
    receiptTimeoutMs: e.X402_RECEIPT_TIMEOUT_MS,
    rpcTimeoutMs: e.X402_RPC_TIMEOUT_MS,
    pollMs: e.X402_POLL_MS,
    batchWindowMs: e.X402_BATCH_WINDOW_MS,
    batchMax: e.X402_BATCH_MAX,
    stuckAfterMs: e.X402_STUCK_AFTER_MS,
    retentionSeconds: e.X402_PAYMENT_RETENTION_SECONDS,
    logRangeBlocks: e.X402_LOG_RANGE_BLOCKS,
  };
}

function versionsConfig(json: string | undefined, problems: string[]): ApiVersion[] | null {
  if (!json) return API_VERSIONS;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    problems.push("API_VERSIONS: not valid JSON");
    return null;
  }
  const parsed = apiVersionsSchema.safeParse(value);
  if (!parsed.success)
    for (const issue of parsed.error.issues)
      problems.push(
        `API_VERSIONS${issue.path.length ? `[${issue.path.join(".")}]` : ""}: ${issue.message}`,
      );
  return parsed.success ? parsed.data : null;
}

/**
 * A bare secret shorter than this is not redacted on its own: it would cut ordinary words out of
 * log lines. A URL's password is redacted whatever its length, where it sits in a URL (`:…@`).
 */
const MIN_BARE_SECRET = 8;

/**
 * The values of the settings that are secrets, as they could appear in a log line: the admin
 * key, the secret keys, the relayers' private keys (with and without 0x), and in every URL
 * setting its password (in its place in a URL, and alone when long enough) and, for the chain
 * RPCs, whose path or query usually holds the provider's API key (`/v2/<key>`), that too; a URL
 * setting that does not parse, whole. Redacted from every log line (src/lib/logger.ts), from the
 * request log's paths (src/http/request-context.ts) and from start-up errors (src/main.ts).
 */
export function secretValues(config: Config): Secret[] {
  const values: Secret[] = [];
  const bare = (value: string | undefined) => {
    if (value && value.length >= MIN_BARE_SECRET) values.push(value);
  };
  const inUrl = (setting: string | undefined, pathIsSecret: boolean) => {
    if (!setting) return;
    let url: URL;
    try {
      url = new URL(setting);
    } catch {
      // Libraries that take it anyway (viem) name it whole in their errors.
      return bare(setting);
    }
    if (url.password) {
      values.push({ urlPassword: url.password });
      bare(percentDecoded(url.password));
    }
    if (pathIsSecret) bare(`${url.pathname === "/" ? "" : url.pathname}${url.search}`);
  };
  bare(config.adminApiKey);
  bare(config.metricsToken);
  for (const key of config.secretKeys) bare(key);
  for (const key of config.x402?.relayerKeys ?? []) values.push(key, key.slice(2));
  inUrl(config.redisUrl, false);
  inUrl(config.books?.url, false);
  inUrl(config.smtpUrl, false);
  for (const url of Object.values(config.workers)) inUrl(url, false);
  for (const network of config.x402?.networks ?? [])
    for (const url of network.rpcUrls) inUrl(url, true);
  for (const tool of config.upstream.tools) for (const secret of tool.secrets) bare(secret);
  return values;
}
