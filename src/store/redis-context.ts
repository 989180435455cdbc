/**
 * What every Redis part of the store (`<concern>/redis.ts`) shares: the one connection, the key
 * names, the Lua scripts (src/credits/lua) loaded as commands, and `call`, which gives each command
 * a deadline and turns a lost or slow connection into StoreUnavailableError (503).
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { ChainableCommander, RedisOptions } from "ioredis";
import { DEPLETED_MESSAGE } from "../events/types.js";
import { StoreUnavailableError } from "./errors.js";
import { connectRedis, type RedisConnection, withinDeadline } from "./redis-connection.js";
import { CALENDAR_WINDOWS, type ControlWindows, type TierLimits } from "./types.js";

/** Every key of one account carries the hash tag `{acct_…}`, so each script touches one cluster slot. */
export const redisKey = {
  account: (id: string) => `{${id}}:account`,
  keyRecord: (id: string, hash: string) => `{${id}}:key:${hash}`,
  keyList: (id: string) => `{${id}}:keys`,
  keySpend: (id: string) => `{${id}}:key-spend`,
  rateLog: (id: string) => `{${id}}:rl`,
  ledger: (id: string) => `{${id}}:ledger`,
  operation: (id: string, requestId: string) => `{${id}}:op:${requestId}`,
  debits: (id: string, slot: number) => `{${id}}:debits:${slot.toString(36)}`,
  outbox: (id: string) => `{${id}}:outbox`,
  idempotency: (id: string, key: string) =>
    `{${id}}:idem:${createHash("sha256").update(key).digest("hex")}`,
  // Global indexes, outside any account slot: written beside, never inside, an account script.
  accounts: () => "accounts",
  email: (email: string) => `email:${email}`,
  outboxAccounts: () => "outbox:accounts",
  bucket: (name: string) => `rl:${name}`,
  setting: (name: string) => `setting:${name}`,
  webhooks: (ownerId: string) => `{${ownerId}}:webhooks`,
  customTools: (accountId: string) => `{${accountId}}:custom-tools`,
  deliveries: (ownerId: string, webhookId: string) => `{${ownerId}}:deliveries:${webhookId}`,
  events: (id: string) => `{${id}}:events`,
  session: (id: string, sessionId: string) => `{${id}}:session:${sessionId}`,
  ssoConnection: (id: string) => `{${id}}:sso`,
  ssoDomain: (domain: string) => `sso-domain:${domain}`,
  once: (name: string) => `once:${name}`,
  sessionEpoch: (id: string) => `{${id}}:session-epoch`,
  // Payments are not an account's: they share one slot of their own, so a claim is one script.
  payment: (id: string) => `{payments}:payment:${id}`,
  paymentServed: (id: string) => `{payments}:served:${id}`,
  openPayments: () => "{payments}:open",
  relayerNonce: (name: string) => `{relayers}:nonce:${name}`,
};

/** The Lua scripts (src/credits/lua/<name>.lua) and how many of their arguments are keys. */
const KEY_COUNTS = {
  admit: 7,
  "top-up": 4,
  refund: 7,
  "create-account": 3,
  "verify-email": 3,
  "set-tier": 1,
  "revoke-key": 2,
  "rate-limit": 1,
  "idempotency-begin": 1,
  "idempotency-complete": 1,
  "idempotent-admit": 8,
  "webhook-add": 1,
  "custom-tool-add": 1,
  "release-lock": 1,
  "payment-claim": 2,
  "payment-save": 2,
  "session-touch": 2,
  "set-workers": 1,
  "relayer-nonce": 1,
  "key-update": 2,
  "spend-alert": 1,
  "outbox-ack": 2,
} as const;
export type ScriptName = keyof typeof KEY_COUNTS;

function loadScript(name: string, prelude: string): string {
  return `${prelude}\n${readFileSync(new URL(`../credits/lua/${name}.lua`, import.meta.url), "utf8")}`;
}

type ScriptRunner = (keys: string[], args: (string | number)[]) => Promise<unknown>;
type ScriptQueuer = (
  pipeline: ChainableCommander,
  keys: string[],
  args: (string | number)[],
) => unknown;

/** The global index writes that go with an account script (`scriptWithIndexes`). */
export interface IndexWrites {
  /** Indexes an account whose script wrote `events` to its outbox (none written: nothing to index). */
  outbox(accountId: string, events: unknown[]): void;
  /** Takes an account out of the outbox index (the relay, before it acknowledges). */
  unindexOutbox(accountId: string): void;
  /** Lists a new account (ZADD NX: an account already listed keeps its place). */
  listAccount(accountId: string, createdAt: number): void;
}

/** What an index write is sent on: the connection itself, or a pipeline being filled. */
interface IndexCommands {
  sadd(key: string, member: string): unknown;
  srem(key: string, member: string): unknown;
  zadd(key: string, nx: "NX", score: number, member: string): unknown;
}

/** The index writes, each handed to `send` as the command to run on its target. */
const indexWrites = (send: (command: (on: IndexCommands) => unknown) => void): IndexWrites => ({
  outbox: (accountId, events) => {
    if (events.length > 0) send((on) => on.sadd(redisKey.outboxAccounts(), accountId));
  },
  unindexOutbox: (accountId) => send((on) => on.srem(redisKey.outboxAccounts(), accountId)),
  listAccount: (accountId, createdAt) =>
    send((on) => on.zadd(redisKey.accounts(), "NX", createdAt, accountId)),
});

/** Defines each script once as a command of the connection (EVALSHA, EVAL on a script cache miss). */
function defineScripts(redis: RedisConnection): {
  run: Record<ScriptName, ScriptRunner>;
  queue: Record<ScriptName, ScriptQueuer>;
} {
  const prelude = `local DEPLETED_MESSAGE = ${JSON.stringify(DEPLETED_MESSAGE)}\n${readFileSync(new URL("../credits/lua/prelude.lua", import.meta.url), "utf8")}`;
  const run = {} as Record<ScriptName, ScriptRunner>;
  const queue = {} as Record<ScriptName, ScriptQueuer>;
  for (const name of Object.keys(KEY_COUNTS) as ScriptName[]) {
    const command = `tg_${name.replace("-", "_")}`;
    redis.defineCommand(command, {
      numberOfKeys: KEY_COUNTS[name],
      lua: loadScript(name, prelude),
    });
    run[name] = (keys, args) =>
      (redis as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[command]!(
        ...keys,
        ...args,
      );
    queue[name] = (pipeline, keys, args) =>
      (pipeline as unknown as Record<string, (...a: unknown[]) => unknown>)[command]!(
        ...keys,
        ...args,
      );
  }
  return { run, queue };
}

export interface RedisStoreOptions {
  url: string;
  keyPrefix: string;
  tiers: TierLimits;
  periodMs: number;
  /** How long a command may wait for a connection before failing with 503, instead of hanging. */
  commandTimeoutMs?: number;
  /** `url` is a node of a Redis Cluster. */
  cluster?: boolean;
  /** The windows of key budgets and the spend alert (default: UTC day, calendar month). */
  controlWindows?: ControlWindows;
}

/** What each concern's Redis part is built from. */
export interface RedisContext {
  readonly redis: RedisConnection;
  readonly options: RedisStoreOptions;
  /** The windows of key budgets and the spend alert. */
  readonly windows: ControlWindows;
  /** Runs commands: connection-level failures become StoreUnavailableError (503); script errors stay bugs (500). */
  call<T>(fn: () => Promise<T>): Promise<T>;
  /** Runs one Lua script (through `call`); a JSON reply comes back parsed. */
  script<T>(name: ScriptName, keys: string[], args: (string | number)[]): Promise<T>;
  /** Records that an account has events waiting; a separate command because the index lies outside the account's slot. */
  markOutbox(accountId: string, events: unknown[]): Promise<void>;
  /**
   * Runs one script with the global index writes that go with it, which lie outside the script's
   * slot: `before` it (the relay unindexes an outbox before acknowledging it) and `after` it (the
   * outbox index after a script that wrote events, the accounts index after a new account). On
   * one Redis node all go in one pipeline, in that order: one round trip. In a Cluster each group
   * is written together in its turn. The writes after are made even if the script refused: an
   * index entry with nothing behind it is harmless (the relay finds the outbox empty), a missing
   * one leaves events undelivered.
   */
  scriptWithIndexes<T>(
    name: ScriptName,
    keys: string[],
    args: (string | number)[],
    indexes: { before?: (writes: IndexWrites) => void; after?: (writes: IndexWrites) => void },
  ): Promise<T>;
  /** How many requests `call` has sent (each a command, a script or a MULTI block). */
  requestsSent(): number;
}

/** Connects (one connection for the whole store) and defines the scripts. */
export function openRedisContext(options: RedisStoreOptions): RedisContext {
  const redisOptions: RedisOptions = {
    keyPrefix: options.keyPrefix,
    // Fail fast while disconnected: callers get 503 store_unavailable instead of waiting.
    // The per-command deadline is ours (`call`), not ioredis's `commandTimeout`: see withinDeadline.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
    lazyConnect: false,
    // No auto-pipelining: it holds each command back to the loop's next turn (setImmediate), so a
    // process busy past a command's deadline would fail commands Redis answered in time
    // (test/integration/redis-command-deadline.test.ts; decisions.md).
    enableAutoPipelining: false,
  };
  const redis = connectRedis(options.url, options.cluster ?? false, redisOptions);
  redis.on("error", () => {
    /* surfaced per command as StoreUnavailableError; ioredis reconnects by itself */
  });
  const { run, queue } = defineScripts(redis);
  const cluster = options.cluster ?? false;
  const timeoutMs = options.commandTimeoutMs ?? 2000;

  /**
   * Until the first connection is made, commands wait for it (bounded); after that a lost
   * connection fails commands at once, so callers get a quick 503 instead of a hang.
   */
  let everReady = false;
  let firstConnection: Promise<void> | null = null;
  function waitForFirstConnection(): Promise<void> {
    firstConnection ??= new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        firstConnection = null;
        reject(new StoreUnavailableError("Redis is not reachable"));
      }, timeoutMs);
      redis.once("ready", () => {
        clearTimeout(timer);
        resolve();
      });
    });
    return firstConnection;
  }

  let sent = 0;
  async function call<T>(fn: () => Promise<T>): Promise<T> {
    sent++;
    if (!everReady) {
      if (redis.status !== "ready") await waitForFirstConnection();
      everReady = true;
    } else if (redis.status !== "ready") {
      // Disconnected after having been connected: fail at once (a cluster client would queue).
      throw new StoreUnavailableError(`Redis is ${redis.status}`);
    }
    try {
      return await withinDeadline(fn(), timeoutMs);
    } catch (err) {
      const message = String((err as Error)?.message ?? err);
      if (
        /Stream isn't writeable|Connection is closed|Command timed out|ECONNREFUSED|max retries|enableOfflineQueue|ETIMEDOUT|ECONNRESET/i.test(
          message,
        )
      ) {
        throw new StoreUnavailableError(message);
      }
      throw err;
    }
  }

  /** A script's reply, a JSON one parsed. */
  const parsed = <T>(raw: unknown): T =>
    (typeof raw === "string" && (raw.startsWith("{") || raw.startsWith("["))
      ? JSON.parse(raw)
      : raw) as T;

  async function script<T>(
    name: ScriptName,
    keys: string[],
    args: (string | number)[],
  ): Promise<T> {
    return parsed<T>(await call(() => run[name](keys, args)));
  }

  async function scriptWithIndexes<T>(
    name: ScriptName,
    keys: string[],
    args: (string | number)[],
    indexes: { before?: (writes: IndexWrites) => void; after?: (writes: IndexWrites) => void },
  ): Promise<T> {
    if (cluster) {
      await writeIndexes(indexes.before);
      const result = await script<T>(name, keys, args);
      await writeIndexes(indexes.after);
      return result;
    }
    const reply = await call(async () => {
      const pipeline = redis.pipeline();
      const writes = indexWrites((command) => command(pipeline));
      indexes.before?.(writes);
      const at = pipeline.length; // the script's reply's place
      queue[name](pipeline, keys, args);
      indexes.after?.(writes);
      const replies = await pipeline.exec();
      // Thrown inside `call`, so a lost connection is told apart from a script's refusal as ever.
      for (const [err] of replies ?? []) if (err) throw err;
      if (!replies?.[at]) throw new Error(`no reply to ${name} from the pipeline`);
      return replies[at][1];
    });
    return parsed<T>(reply);
  }

  /** Index writes as requests of their own, made together. */
  async function writeIndexes(group?: (writes: IndexWrites) => void): Promise<void> {
    const writes: Promise<unknown>[] = [];
    group?.(indexWrites((command) => writes.push(call(async () => command(redis)))));
    await Promise.all(writes);
  }

  async function markOutbox(accountId: string, events: unknown[]): Promise<void> {
    await writeIndexes((writes) => writes.outbox(accountId, events));
  }

  return {
    redis,
    options,
    windows: options.controlWindows ?? CALENDAR_WINDOWS,
    call,
    script,
    markOutbox,
    scriptWithIndexes,
    requestsSent: () => sent,
  };
}
