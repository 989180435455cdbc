import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { loadConfig } from "../../src/config.js";
import { start } from "../../src/main.js";
import type { Services } from "../../src/services.js";
import { randomId } from "../../src/lib/ids.js";
import type { EventRecord } from "../../src/events/types.js";
import type { Store } from "../../src/store/types.js";
import { loadWorkerConfig } from "../../src/workers/config.js";
import { startWorkers } from "../../src/workers/main.js";
import { REDIS_URL, dropPrefix, uniquePrefix } from "./redis.js";
import { gatewayEntry } from "./compiled.js";

export const ADMIN_KEY = `tg_admin_${"x".repeat(32)}`;

export interface TestGateway {
  url: string;
  services: Services;
  prefix: string;
  stop(): Promise<void>;
}

/**
 * A gateway in this process, on a free port, with a real store (Redis unless told otherwise)
 * and real tool workers (an HTTP server in this process, configured by `workerEnv`), unless
 * `env.WORKERS_URL` points elsewhere.
 */
export async function startGateway(
  options: {
    store?: "redis" | "memory";
    prefix?: string;
    env?: Record<string, string>;
    workerEnv?: Record<string, string>;
  } = {},
): Promise<TestGateway> {
  const prefix = options.prefix ?? uniquePrefix("gw");
  const workers = options.env?.WORKERS_URL
    ? null
    : await startWorkers(
        loadWorkerConfig({ PORT: "0", LOG_LEVEL: "silent", ...options.workerEnv }),
      );
  const config = loadConfig({
    NODE_ENV: "test",
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    ADMIN_API_KEY: ADMIN_KEY,
    REDIS_KEY_PREFIX: prefix,
    DEV_SEED: "0",
    // The tests play many clients through one loopback "proxy": they name each client in X-Forwarded-For.
    TRUST_PROXY: "loopback",
    // The books (PGlite takes seconds and hundreds of MB to start) only where a test asks for them.
    DATABASE_URL: "none",
    ...(options.store === "memory" ? {} : { REDIS_URL }),
    ...(workers ? { WORKERS_URL: `http://127.0.0.1:${workers.port}` } : {}),
    ...options.env,
  });
  const { server, services, stop } = await start(config);
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    services,
    prefix,
    async stop() {
      await stop();
      await workers?.stop();
      if (options.store !== "memory" && !options.prefix) await dropPrefix(prefix);
    },
  };
}

export interface GatewayProcess {
  url: string;
  child: ChildProcess;
  /** Lines the process wrote to stdout (JSON logs), for assertions on logging. */
  output: string[];
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `entry` (TypeScript under node + tsx, compiled JavaScript under plain node) and waits for its JSON log line `{"msg": readyMessage, "port"}`. */
export async function spawnService(
  entry: string,
  readyMessage: string,
  env: Record<string, string>,
  nodeArgs: string[] = [],
): Promise<GatewayProcess> {
  const child = spawn(
    process.execPath,
    [...nodeArgs, ...(entry.endsWith(".ts") ? ["--import", "tsx"] : []), entry],
    {
      cwd: new URL("../..", import.meta.url).pathname,
      // The test CA (NODE_EXTRA_CA_CERTS) is passed on, as it would be in any deployment that uses one.
      env: {
        PATH: process.env.PATH,
        ...(process.env.NODE_EXTRA_CA_CERTS
          ? { NODE_EXTRA_CA_CERTS: process.env.NODE_EXTRA_CA_CERTS }
          : {}),
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const output: string[] = [];
  let stderr = "";
  child.stderr!.on("data", (d) => (stderr += d));
  const lines = createInterface({ input: child.stdout! });
  const port = await new Promise<number>((resolve, reject) => {
    // A cold start (tsx, then the bundled workers) takes ~5 s alone; far longer on a loaded 2-core machine.
    // A process that did not start in time is stopped, not left running (with its own children) after the test.
    const timer = setTimeout(() => {
      child.kill("SIGTERM");
      reject(new Error(`${entry} did not start within 60 s: ${stderr}`));
    }, 60_000);
    lines.on("line", (line) => {
      output.push(line);
      if (!line.includes(`"msg":"${readyMessage}"`)) return;
      clearTimeout(timer);
      resolve((JSON.parse(line) as { port: number }).port);
    });
    child.once("exit", (code) => reject(new Error(`${entry} exited with ${code}: ${stderr}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    output,
    async stop(signal = "SIGTERM") {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill(signal);
      const [code] = await once(child, "exit");
      return code as number | null;
    },
  };
}

/**
 * A real gateway process (under vitest, the sources as compiled for this run by
 * compiled-setup.ts; else, or with another `entry`, `src/main.ts` under tsx or the production
 * build) on a free port, sharing Redis through `prefix`; an `env` value of undefined leaves that
 * default unset.
 */
export function spawnGateway(
  prefix: string,
  env: Record<string, string | undefined> = {},
  nodeArgs: string[] = [],
  entry = gatewayEntry(),
): Promise<GatewayProcess> {
  const settings = {
    NODE_ENV: "test",
    PORT: "0",
    HOST: "127.0.0.1",
    REDIS_URL,
    REDIS_KEY_PREFIX: prefix,
    ADMIN_API_KEY: ADMIN_KEY,
    SECRET_KEY: "s".repeat(32),
    LOG_LEVEL: "info",
    TRUST_PROXY: "loopback", // as startGateway: the tests name their clients in X-Forwarded-For
    ...env,
  };
  return spawnService(
    entry,
    "listening",
    Object.fromEntries(
      Object.entries(settings).filter((e): e is [string, string] => e[1] !== undefined),
    ),
    nodeArgs,
  );
}

/**
 * Two gateway processes sharing `prefix`, started together. If one fails to start, the other is
 * stopped before the error is thrown: the hook that asked for them fails, and nothing else would
 * ever stop it.
 */
export async function spawnGatewayPair(
  prefix: string,
  env: Record<string, string | undefined> = {},
): Promise<[GatewayProcess, GatewayProcess]> {
  const [a, b] = await Promise.allSettled([spawnGateway(prefix, env), spawnGateway(prefix, env)]);
  if (a.status === "fulfilled" && b.status === "fulfilled") return [a.value, b.value];
  await Promise.all([a, b].map((s) => (s.status === "fulfilled" ? s.value.stop() : null)));
  throw a.status === "rejected" ? a.reason : (b as PromiseRejectedResult).reason;
}

export interface Json {
  status: number;
  headers: Headers;
  body: any;
}

/** fetch + JSON, with the key header when given. */
export async function call(
  url: string,
  init: {
    method?: string;
    key?: string;
    body?: unknown;
    rawBody?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<Json> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.key) headers["x-api-key"] = init.key;
  let body: string | undefined = init.rawBody;
  if (init.body !== undefined) body = JSON.stringify(init.body);
  if (body !== undefined && !headers["content-type"]) headers["content-type"] = "application/json";
  const res = await fetch(url, {
    method: init.method ?? (body !== undefined ? "POST" : "GET"),
    headers,
    body,
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    /* not JSON */
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/** Signs up a fresh account through the API; returns its id and key. */
export async function signUp(
  url: string,
): Promise<{ accountId: string; key: string; keyId: string }> {
  const res = await call(`${url}/api/v1/signup`, {
    body: { email: `user-${randomId(10)}@example.com` },
    headers: {
      "x-forwarded-for": `10.0.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`,
    },
  });
  if (res.status !== 201)
    throw new Error(`sign-up failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { accountId: res.body.account.id, key: res.body.api_key, keyId: res.body.key.id };
}

/** A signed-up account moved to `tier` with `credits` in total, for tests of tool calls. */
export async function fundedAccount(
  url: string,
  credits = 1000,
  tier = "business",
): Promise<{ accountId: string; key: string; keyId: string }> {
  const account = await signUp(url);
  await admin(url, `/accounts/${account.accountId}/tier`, { method: "PUT", body: { tier } });
  if (credits > 25)
    await admin(url, `/accounts/${account.accountId}/credits`, {
      body: { amount: credits - 25, reason: "test funds" },
    });
  return account;
}

export const balanceOf = async (url: string, key: string): Promise<number> =>
  (await call(`${url}/api/v1/account`, { key })).body.credits;

export const callTool = (
  url: string,
  key: string | undefined,
  name: string,
  body: unknown,
  headers: Record<string, string> = {},
) => call(`${url}/v1/tools/${name}`, { method: "POST", key, body, headers });

/** Every item of a paged account list (`url` with its query), following `next_cursor` to the end. */
export async function everyPage<T>(url: string, key: string): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | null = null;
  do {
    const res = await call(`${url}${cursor ? `&cursor=${cursor}` : ""}`, { key });
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${JSON.stringify(res.body)}`);
    items.push(...res.body.data);
    cursor = res.body.next_cursor;
  } while (cursor);
  return items;
}

/** The account's events once the relay has handed `count` of them on (polls; the relay runs every 200 ms). */
export async function eventsOf(
  store: Store,
  accountId: string,
  count: number,
  timeoutMs = 5000,
): Promise<EventRecord[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const events = (await store.listEvents(accountId, 1000)).reverse();
    if (events.length >= count || Date.now() > deadline) return events;
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const admin = (
  url: string,
  path: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
) => call(`${url}/api/v1/admin${path}`, { ...init, key: ADMIN_KEY });

export { dropPrefix, uniquePrefix };

/**
 * A dashboard session cookie for the account of `apiKey`, signed in through the sign-in form as a
 * browser on the page would, from a client address of its own (the form is limited per address).
 */
export async function dashboardSession(baseUrl: string, apiKey: string): Promise<string> {
  const res = await fetch(`${baseUrl}/dashboard/sign-in`, {
    method: "POST",
    redirect: "manual",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "sec-fetch-site": "same-origin",
      "x-forwarded-for": `10.31.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`,
    },
    body: new URLSearchParams({ api_key: apiKey }).toString(),
  });
  if (res.status !== 303) throw new Error(`dashboard sign-in answered ${res.status}`);
  return (res.headers.get("set-cookie") ?? "").split(";")[0]!;
}

/** The dashboard's "e-mail me a sign-in link" form, posted as a browser on the page would, from `client` (X-Forwarded-For). */
export const requestSignInLink = (baseUrl: string, email: string, client: string) =>
  fetch(`${baseUrl}/dashboard/sign-in/email`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "sec-fetch-site": "same-origin",
      "x-forwarded-for": client,
    },
    body: new URLSearchParams({ email }).toString(),
  });
