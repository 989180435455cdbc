import { Agent } from "node:http";
import { Agent as TlsAgent } from "node:https";
import type { Logger } from "pino";
import type { AccountRecord } from "../store/types.js";
import { guardAgent } from "../webhooks/ssrf.js";
import { dedicatedOrigin } from "./dedicated-workers.js";
import type { WorkerPool } from "./definition.js";
import { createHttpForwarder, createProxyForwarder, type Forwarder } from "./forward.js";
import { PriorityGate } from "./priority-gate.js";

export interface PoolSettings {
  urls: Record<WorkerPool, string>;
  concurrency: Record<WorkerPool, number>;
  queueTimeoutMs: number;
  /** The largest answer read from a worker; a larger one fails the call (refunded). */
  maxResponseBytes: number;
  /** Dedicated pools may be on loopback or private networks (development and tests only). */
  dedicatedAllowPrivate?: boolean;
  /** How deep a dedicated pool's answer may nest (BODY_MAX_DEPTH, as a request body); deeper fails the call. */
  dedicatedMaxDepth?: number;
}

/** Where one call goes: the pool's origin and gate, and the forwarder to use (null: the door's own). */
export interface PoolRoute {
  origin: string;
  gate: PriorityGate;
  forward: Forwarder | null;
}

/** One account's share of a shared pool that runs `capacity` calls at once: half, rounded up. */
const fairShare = (capacity: number): number => Math.ceil(capacity / 2);

/** Dedicated pools' gates idle for this long are dropped, so unbound pools leave nothing behind. */
const DEDICATED_GATE_SWEEP_AT = 1000;

/**
 * The gateway's view of the tool workers: where each pool lives, one keep-alive agent, one
 * priority gate per pool, and which tools the workers say they can run (refreshed in the
 * background, so an unconfigured tool is refused before anything is charged).
 */
export class WorkerPools {
  readonly agent = new Agent({ keepAlive: true, maxSockets: 256, keepAliveMsecs: 10_000 });
  /** The REST door's forwarder: proxies the caller's own HTTP exchange to the worker. */
  readonly proxy: ReturnType<typeof createProxyForwarder>;
  /** For doors with no HTTP exchange of their own to proxy (MCP). */
  readonly http: Forwarder;
  private readonly gates = new Map<WorkerPool, PriorityGate>();
  private readonly unavailable = new Map<string, string>();
  private timer: NodeJS.Timeout | null = null;
  /**
   * Dedicated pools are reached through their own agents, which run the SSRF guard at connect time
   * (a bound name that later resolves to a private address, or an IP-literal origin bound while
   * private targets were allowed, is refused then), and
   * through gates of their own, so a dedicated account neither takes nor waits for shared slots.
   */
  private readonly dedicatedAgent: Agent;
  private readonly dedicatedTlsAgent: TlsAgent;
  private readonly dedicatedForward: Forwarder;
  private readonly dedicatedGates = new Map<string, PriorityGate>();

  constructor(
    readonly settings: PoolSettings,
    private readonly log: Logger,
  ) {
    // One account holds at most half of a shared pool's slots (in this process): the rest stay
    // for everyone else however many of its calls run to their deadline. The heavy pool's share
    // is cut to half of the workers' own heavy threads once they say how many (`refresh`).
    for (const pool of Object.keys(settings.urls) as WorkerPool[]) {
      const limit = settings.concurrency[pool];
      this.gates.set(pool, new PriorityGate(limit, fairShare(limit)));
    }
    this.proxy = createProxyForwarder(this.agent, settings.maxResponseBytes);
    this.http = createHttpForwarder(this.agent, settings.maxResponseBytes);
    const allowPrivate = settings.dedicatedAllowPrivate ?? false;
    const options = { keepAlive: true, maxSockets: 64, keepAliveMsecs: 10_000 };
    this.dedicatedAgent = guardAgent(new Agent(options), allowPrivate);
    this.dedicatedTlsAgent = guardAgent(new TlsAgent(options), allowPrivate);
    this.dedicatedForward = createHttpForwarder(
      this.dedicatedAgent,
      settings.maxResponseBytes,
      this.dedicatedTlsAgent,
      settings.dedicatedMaxDepth,
    );
  }

  /**
   * Where a call of `account` to a tool of `pool` goes: its dedicated pool if it has one, else the
   * shared pool. `account` is null for a call that no dedicated pool serves (a custom or operator
   * tool's, which goes to its own endpoint through the shared pool's gate).
   */
  route(pool: WorkerPool, account: AccountRecord | null): PoolRoute {
    const origin = account && dedicatedOrigin(account);
    if (!origin) return { origin: this.url(pool), gate: this.gate(pool), forward: null };
    const name = `${pool} ${origin}`;
    let gate = this.dedicatedGates.get(name);
    if (!gate) {
      if (this.dedicatedGates.size >= DEDICATED_GATE_SWEEP_AT) {
        for (const [key, g] of this.dedicatedGates)
          if (g.inFlight === 0 && g.queued === 0) this.dedicatedGates.delete(key);
      }
      gate = new PriorityGate(this.settings.concurrency[pool]);
      this.dedicatedGates.set(name, gate);
    }
    return { origin, gate, forward: this.dedicatedForward };
  }

  url(pool: WorkerPool): string {
    return this.settings.urls[pool];
  }

  gate(pool: WorkerPool): PriorityGate {
    return this.gates.get(pool)!;
  }

  /** Why a tool cannot run now (provider not configured), or null. Unknown = try it. */
  unavailableReason(tool: string): string | null {
    return this.unavailable.get(tool) ?? null;
  }

  async refresh(): Promise<void> {
    for (const url of new Set(Object.values(this.settings.urls))) {
      try {
        const res = await fetch(`${url}/tools`, { signal: AbortSignal.timeout(2000) });
        const body = (await res.json()) as {
          tools: { name: string; available: boolean; reason: string | null }[];
          heavy_threads?: unknown;
        };
        for (const t of body.tools) {
          if (t.available) this.unavailable.delete(t.name);
          else this.unavailable.set(t.name, t.reason ?? "unavailable");
        }
        if (url === this.settings.urls.heavy) this.fitHeavyShare(body.heavy_threads);
      } catch (err) {
        this.log.warn({ err: String(err), url }, "could not read the workers' tool availability");
      }
    }
  }

  /**
   * Heavy calls beyond the workers' threads wait in the workers' own queue, past this gate: half
   * of HEAVY_POOL_CONCURRENCY (4 of 8) could be every thread (2 by default), and another account's
   * call would wait there behind one account's calls that run to their deadline. So one account's
   * share is half of what really runs at once, the smaller of the gate's slots and the threads.
   */
  private fitHeavyShare(threads: unknown): void {
    if (!Number.isSafeInteger(threads) || (threads as number) < 1) return;
    const gate = this.gate("heavy");
    gate.setShare(fairShare(Math.min(gate.limit, threads as number)));
  }

  async start(intervalMs = 10_000): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.agent.destroy();
    this.dedicatedAgent.destroy();
    this.dedicatedTlsAgent.destroy();
  }
}
