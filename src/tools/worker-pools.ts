import { Agent } from "node:http";
import { createHttpForwarder, createProxyForwarder } from "./forward.js";
import type { Logger } from "pino";
import type { WorkerPool } from "./definition.js";
import { PriorityGate } from "./priority-gate.js";

export interface PoolSettings {
  urls: Record<WorkerPool, string>;
  concurrency: Record<WorkerPool, number>;
  queueTimeoutMs: number;
}

/**
 * The gateway's view of the tool workers: where each pool lives, one keep-alive agent, one
 * priority gate per pool, and which tools the workers say they can run (refreshed in the
 * background, so an unconfigured tool is refused before anything is charged).
 */
export class WorkerPools {
  readonly agent = new Agent({ keepAlive: true, maxSockets: 256, keepAliveMsecs: 10_000 });
  /** The REST door's forwarder: proxies the caller's own HTTP exchange to the worker. */
  readonly proxy = createProxyForwarder(this.agent);
  /** For doors with no HTTP exchange of their own to proxy (MCP). */
  readonly http = createHttpForwarder(this.agent);
  private readonly gates = new Map<WorkerPool, PriorityGate>();
  private readonly unavailable = new Map<string, string>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    readonly settings: PoolSettings,
    private readonly log: Logger,
  ) {
    for (const pool of Object.keys(settings.urls) as WorkerPool[]) this.gates.set(pool, new PriorityGate(settings.concurrency[pool]));
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
        const body = (await res.json()) as { tools: { name: string; available: boolean; reason: string | null }[] };
        for (const t of body.tools) {
          if (t.available) this.unavailable.delete(t.name);
          else this.unavailable.set(t.name, t.reason ?? "unavailable");
        }
      } catch (err) {
        this.log.warn({ err: String(err), url }, "could not read the workers' tool availability");
      }
    }
  }

  async start(intervalMs = 10_000): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.agent.destroy();
  }
}
