/**
 * What every Redis part of the store (`<concern>/redis.ts`) shares: the one connection, the key
 * names, the Lua scripts (src/credits/lua) loaded as commands, and `call`, which gives each command
 * a deadline and turns a lost or slow connection into StoreUnavailableError (503).
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Socket } from "node:net";
import type { ChainableCommander, Redis, RedisOptions } from "ioredis";
import { DEPLETED_MESSAGE } from "../events/types.js";
import { StoreUnavailableError } from "./errors.js";
import {
  connectRedis,
  DEADLINE_PASSED,
  type RedisConnection,
  refusedDatabase,
  withinDeadline,
} from "./redis-connection.js";
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
  keptAnswerBytes: (id: string) => `{${id}}:idem-bytes`,
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
  paymentCall: (accountId: string, key: string) =>
    `{payments}:call:${accountId}:${createHash("sha256").update(key).digest("hex")}`,
  openPayments: () => "{payments}:open",
  relayerNonce: (name: string) => `{relayers}:nonce:${name}`,
  // The open charged calls of each gateway process, and their heartbeats: one slot of their own.
  openCharges: (processId: string) => `{open-charges}:calls:${processId}`,
  chargeProcesses: () => "{open-charges}:processes",
};

/** The Lua scripts (src/credits/lua/<name>.lua) and how many of their arguments are keys. */
const KEY_COUNTS = {
  admit: 7,
  "top-up": 4,
  refund: 7,
  "create-account": 3,
  "verify-email": 3,
  "set-tier": 1,
  "revoke-key": 3,
  "key-add": 2,
  "rate-limit": 1,
  "idempotency-begin": 1,
  "idempotency-complete": 2,
  "idempotency-release": 1,
  "idempotent-admit": 8,
  "webhook-add": 1,
  "webhook-rotate": 1,
  "delivery-record": 2,
  "custom-tool-add": 1,
  "release-lock": 1,
  "compare-and-set": 1,
  "incident-open": 4,
  "payment-claim": 3,
  "payment-save": 2,
  "session-touch": 2,
  "set-workers": 1,
  "relayer-nonce": 1,
  "key-update": 3,
  "spend-alert": 1,
  "outbox-ack": 2,
  "open-charge-close": 1,
  "open-charges-take": 2,
} as const;
export type ScriptName = keyof typeof KEY_COUNTS;

function loadScript(name: string, prelude: string): string {
  return `${prelude}\n${readFileSync(new URL(`../credits/lua/${name}.lua`, import.meta.url), "utf8")}`;
}

type ScriptRunner = (keys: string[], args: (string | number)[]) => Promise<unknown>;

/** The global index writes that go with an account script (`scriptWithIndexes`). */
export interface IndexWrites {
  /** Indexes an account whose script wrote `events` to its outbox (none written: nothing to index). */
  outbox(accountId: string, events: unknown[]): void;
  /** Lists a new account (ZADD NX: an account already listed keeps its place). */
  listAccount(accountId: string, createdAt: number): void;
}

/** The index writes, each handed to `send` as the command to run on its target (`together`'s). */
const indexWrites = (
  send: (command: (on: ChainableCommander) => unknown) => void,
): IndexWrites => ({
  outbox: (accountId, events) => {
    if (events.length > 0) send((on) => on.sadd(redisKey.outboxAccounts(), accountId));
  },
  listAccount: (accountId, createdAt) =>
    send((on) => on.zadd(redisKey.accounts(), "NX", createdAt, accountId)),
});

/** What `together` hands each command: where to send it, and the scripts to send there. */
export interface TogetherTarget {
  /** The connection's commands: a command returns what its method returns (a promise of its reply). */
  on: ChainableCommander;
  script(name: ScriptName, keys: string[], args: (string | number)[]): unknown;
}

/** One command for `together`. */
export type TogetherCommand = (to: TogetherTarget) => unknown;

/** A group of index writes (`IndexWrites`) as commands for `together`. */
const indexCommands = (group: (writes: IndexWrites) => void): TogetherCommand[] => {
  const commands: TogetherCommand[] = [];
  group(indexWrites((command) => commands.push(({ on }) => command(on))));
  return commands;
};

/** Defines each script once as a command of the connection (EVALSHA, EVAL on a script cache miss). */
function defineScripts(redis: RedisConnection): Record<ScriptName, ScriptRunner> {
  const prelude = `local DEPLETED_MESSAGE = ${JSON.stringify(DEPLETED_MESSAGE)}\n${readFileSync(new URL("../credits/lua/prelude.lua", import.meta.url), "utf8")}`;
  const run = {} as Record<ScriptName, ScriptRunner>;
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
  }
  return run;
}

/** Where a connection goes and how long its commands may take. */
export interface RedisConnectionOptions {
  url: string;
  keyPrefix: string;
  /** How long a command may wait for a connection before failing with 503, instead of hanging. */
  commandTimeoutMs?: number;
  /** `url` is a node of a Redis Cluster. */
  cluster?: boolean;
}

export interface RedisStoreOptions extends RedisConnectionOptions {
  tiers: TierLimits;
  periodMs: number;
  /** The windows of key budgets and the spend alert (default: UTC day, calendar month). */
  controlWindows?: ControlWindows;
}

/** What each concern's Redis part is built from: a client, and the store's settings. */
export interface RedisContext extends RedisClient {
  readonly options: RedisStoreOptions;
  /** The windows of key budgets and the spend alert. */
  readonly windows: ControlWindows;
}

/**
 * One connection and the way to send commands on it. The status store (src/status/redis-store.ts)
 * opens one of its own: its failures then answer 503 as the store's do, not 500.
 */
export interface RedisClient {
  readonly redis: RedisConnection;
  /** Runs commands: connection-level failures become StoreUnavailableError (503); script errors stay bugs (500). */
  call<T>(fn: () => Promise<T>): Promise<T>;
  /** Runs one Lua script (through `call`); a JSON reply comes back parsed. */
  script<T>(name: ScriptName, keys: string[], args: (string | number)[]): Promise<T>;
  /** Records that an account has events waiting; a separate command because the index lies outside the account's slot. */
  markOutbox(accountId: string, events: unknown[]): Promise<void>;
  /**
   * Runs one script with the global index writes that go after it, which lie outside the script's
   * slot (the outbox index after a script that wrote events, the accounts index after a new
   * account): `together`, so on one Redis node one round trip. The writes are made even if the
   * script refused (on one node; in a Cluster they follow the script's answer): an
   * index entry with nothing behind it is harmless (the relay finds the outbox empty), a missing
   * one leaves events undelivered.
   */
  scriptWithIndexes<T>(
    name: ScriptName,
    keys: string[],
    args: (string | number)[],
    indexes: { after: (writes: IndexWrites) => void },
  ): Promise<T>;
  /**
   * Sends groups of commands, each group after the one before, the commands of a group
   * independent of each other. On one Redis node all are sent in one turn of the loop: one write, one round
   * trip, run by Redis in that order. In a Cluster, where their keys lie in different slots, a
   * group's commands go side by side, one request, and the groups one after another. Answers each
   * group's replies as Redis gave them, in order; any command's error fails the whole.
   */
  together(...groups: TogetherCommand[][]): Promise<unknown[][]>;
  /** How many requests `call` has sent (each a command, a script, a MULTI block or a `together`). */
  requestsSent(): number;
}

/** Connects (one connection for the whole store) and defines the scripts. */
export function openRedisContext(options: RedisStoreOptions): RedisContext {
  return {
    ...openRedisClient(options),
    options,
    windows: options.controlWindows ?? CALENDAR_WINDOWS,
  };
}

/** Connects and defines the scripts. */
export function openRedisClient(options: RedisConnectionOptions): RedisClient {
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
  const run = defineScripts(redis);
  const cluster = options.cluster ?? false;
  const timeoutMs = options.commandTimeoutMs ?? 2000;

  /**
   * Until the first connection is made, commands wait for it (bounded); after that a lost
   * connection fails commands at once, so callers get a quick 503 instead of a hang.
   */
  let everReady = false;
  let firstConnection: Promise<void> | null = null;
  function waitForFirstConnection(): Promise<void> {
    const refused = refusedDatabase(redis);
    if (refused) return Promise.reject(new StoreUnavailableError(refused));
    firstConnection ??= new Promise<void>((resolve, reject) => {
      // Each wait takes its listeners off when it ends: a Redis never reached left two more on the
      // client every 2 s of traffic (Node's MaxListenersExceededWarning, and a slow leak).
      const done = () => {
        clearTimeout(timer);
        redis.off("ready", ready);
        redis.off("end", ended);
      };
      const timer = setTimeout(() => {
        done();
        firstConnection = null;
        reject(new StoreUnavailableError("Redis is not reachable"));
      }, timeoutMs);
      const ready = () => {
        done();
        resolve();
      };
      // Closed for good because its database could not be selected: no "ready" will come.
      const ended = () => {
        const refused = refusedDatabase(redis);
        if (!refused) return;
        done();
        reject(new StoreUnavailableError(refused));
      };
      redis.once("ready", ready);
      redis.on("end", ended);
    });
    return firstConnection;
  }

  /**
   * Commands started in one turn of the loop (one callback and the promise continuations it runs:
   * the payments of one settled batch crediting their accounts) leave in one socket write: the
   * socket is corked at the turn's first command and uncorked on process.nextTick, which runs
   * before the loop polls again. Nothing waits for a later turn (unlike ioredis's auto-pipelining,
   * decisions.md), and Redis is woken once, not once per command. A Cluster's commands go to
   * several sockets: left alone.
   */
  let corked: Socket | null = null;
  const uncork = () => {
    corked?.uncork();
    corked = null;
  };
  function coalesceWrites(): void {
    if (cluster || corked) return;
    const stream = (redis as Redis).stream as Socket | undefined;
    if (!stream?.writable) return;
    stream.cork();
    corked = stream;
    process.nextTick(uncork);
  }

  /**
   * A Redis that holds its connection open but answers nothing (stopped, swapping, stuck in a long
   * script) fails each command only at its deadline, and a request making two or three commands
   * one after another took 4–6 s to be refused. Once a command's deadline passes with no answer
   * from Redis to any command since it was sent, Redis is "not answering": commands fail at once,
   * as while disconnected, and a PING is sent (one at a time, each with the same deadline) until
   * Redis answers one, or any command still out. Slow answers among others (a busy process) trip
   * nothing.
   */
  let answers = 0;
  let notAnswering = false;
  const answered = () => {
    answers++;
    notAnswering = false;
  };
  function stopAnswering(): void {
    if (notAnswering) return;
    notAnswering = true;
    const ask = (): void => {
      if (!notAnswering || redis.status === "end") return; // answered, or the store closed
      withinDeadline(redis.ping(), timeoutMs).then(answered, () => {
        if (notAnswering) setTimeout(ask, 100).unref();
      });
    };
    ask();
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
    if (notAnswering) throw new StoreUnavailableError("Redis is not answering");
    const answersBefore = answers;
    coalesceWrites();
    try {
      const reply = await withinDeadline(fn(), timeoutMs);
      answered();
      return reply;
    } catch (err) {
      const message = String((err as Error)?.message ?? err);
      if (message !== DEADLINE_PASSED)
        answers++; // an error reply is an answer too
      else if (answers === answersBefore) stopAnswering();
      if (
        /Stream isn't writeable|Connection is closed|Command timed out|ECONNREFUSED|max retries|enableOfflineQueue|ETIMEDOUT|ECONNRESET|Too many Cluster redirections/i.test(
          message,
        ) ||
        // Redis's own error codes, in capitals as Redis sends them (so a script's "loading" or
        // "readonly" in prose stays a bug): a Cluster master down, a resharding or failover
        // under way, a node still loading its data; a Redis refusing writes for a while (full at
        // maxmemory, unable to persist, short of replicas) or busy with a script. A script refused
        // for OOM wrote nothing: Redis refuses a script's first write, never a later one.
        /\b(CLUSTERDOWN|TRYAGAIN|MASTERDOWN|LOADING|READONLY|OOM|MISCONF|NOREPLICAS|BUSY)\b/.test(
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
    indexes: { after: (writes: IndexWrites) => void },
  ): Promise<T> {
    const replies = await together(
      [({ script }) => script(name, keys, args)],
      indexCommands(indexes.after),
    );
    return parsed<T>(replies[0]![0]);
  }

  async function together(...groups: TogetherCommand[][]): Promise<unknown[][]> {
    const on = redis as unknown as ChainableCommander;
    const script: TogetherTarget["script"] = (name, keys, args) => run[name](keys, args);
    const send = (commands: TogetherCommand[]) =>
      Promise.all(commands.map((command) => command({ on, script })));
    if (cluster) {
      const answers: unknown[][] = [];
      for (const group of groups)
        answers.push(group.length === 0 ? [] : await call(() => send(group)));
      return answers;
    }
    // On one node the commands are sent one after another in this turn of the loop: the corked
    // socket (coalesceWrites) writes them at once, and Redis runs them in that order. Cheaper
    // than ioredis's Pipeline (its own queue, promises and reply bookkeeping), for the same write.
    const commands = groups.flat();
    if (commands.length === 0) return groups.map(() => []);
    const replies = await call(() => send(commands));
    let at = 0;
    return groups.map((group) => replies.slice(at, (at += group.length)));
  }

  async function markOutbox(accountId: string, events: unknown[]): Promise<void> {
    await together(indexCommands((writes) => writes.outbox(accountId, events)));
  }

  return {
    redis,
    call,
    script,
    markOutbox,
    scriptWithIndexes,
    together,
    requestsSent: () => sent,
  };
}
