import { every } from "../lib/periodic.js";
import type { Services } from "../services.js";
import { componentChecks, type ComponentCheck } from "./components.js";
import type { CheckResult, StatusStore } from "./store.js";

/**
 * Runs every component's check in the background, every `intervalMs` (never on page load), and
 * records the round in the status store. Check latencies are also kept in this process, for the
 * percentiles of components whose traffic the HTTP metrics do not see.
 */
const LATENCY_SAMPLES = 200;
/** A check not answered in this time reads "degraded" (a refused connection fails at once). */
const CHECK_TIMEOUT_MS = 5000;

export interface StatusChecker {
  components: ComponentCheck[];
  /** Recent check round-trip times per component, milliseconds, oldest first. */
  latencies(component: string): number[];
  /** This process's latest round, for when the shared store cannot be read. */
  lastRound(): CheckResult[];
  runOnce(): Promise<CheckResult[]>;
  /** Stops the rounds; from the call on, a round still running is not recorded. */
  stop(): Promise<void>;
}

export function startStatusChecks(
  services: Omit<Services, "status">,
  store: StatusStore,
  selfUrl: string,
  intervalMs: number,
): StatusChecker {
  const components = componentChecks(services, selfUrl);
  const samples = new Map<string, number[]>();
  const timeoutMs = CHECK_TIMEOUT_MS;

  const runOne = async (component: ComponentCheck): Promise<CheckResult> => {
    const started = performance.now();
    let outcome: Pick<CheckResult, "state" | "detail">;
    // The detail is public (/status, /status.json): a library's message can name a configured URL
    // with its password or API key (fetch refusing a WORKERS_URL with credentials). The secrets
    // are cut out before the message is shortened, so that no part of one survives the cut.
    try {
      outcome = await component.check(AbortSignal.timeout(timeoutMs));
      if (outcome.detail) outcome = { ...outcome, detail: services.redactSecrets(outcome.detail) };
    } catch (err) {
      outcome = {
        state: "degraded",
        detail:
          err instanceof Error
            ? services.redactSecrets(err.message.split("\n")[0]!).slice(0, 200)
            : "check failed",
      };
    }
    const latencyMs = Math.round((performance.now() - started) * 100) / 100;
    const list = samples.get(component.id) ?? [];
    list.push(latencyMs);
    if (list.length > LATENCY_SAMPLES) list.shift();
    samples.set(component.id, list);
    return { component: component.id, ...outcome, latencyMs, checkedAt: Date.now() };
  };

  let lastRound: CheckResult[] = [];
  // Once the process is shutting down its listener closes under the checks: a round that found it
  // closed is this process leaving, not an outage, and must not reach the shared uptime counts.
  let stopped = false;
  const runOnce = async () => {
    const results = await Promise.all(components.map(runOne));
    if (stopped) return results;
    lastRound = results;
    await store.record(results);
    return results;
  };
  const loop = every(
    intervalMs,
    async () => void (await runOnce()),
    (err) => services.log.warn({ err: String(err) }, "status checks could not be recorded"),
  );
  // The first round at once, so a fresh process has a state to show.
  const first = runOnce().catch((err) =>
    services.log.warn({ err: String(err) }, "status checks could not be recorded"),
  );
  return {
    components,
    latencies: (component) => [...(samples.get(component) ?? [])],
    lastRound: () => lastRound,
    runOnce,
    async stop() {
      stopped = true;
      await first;
      await loop.stop();
    },
  };
}
