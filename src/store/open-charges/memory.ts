/**
 * Open charged calls in memory. The embedded mode is one process, whose open calls die with its
 * ledger, so there is nothing for a survivor to take; kept only to honour the same interface.
 */
import type { OpenCharge, OpenChargeStore } from "./index.js";

export function memoryOpenCharges(): OpenChargeStore {
  const heartbeats = new Map<string, number>();
  const open = new Map<string, Map<string, OpenCharge | "taken">>();
  const callsOf = (processId: string) => {
    let calls = open.get(processId);
    if (!calls) open.set(processId, (calls = new Map()));
    return calls;
  };
  return {
    async heartbeat(processId, at) {
      heartbeats.set(processId, at);
    },
    async markOpen(processId, charges) {
      for (const c of charges) callsOf(processId).set(c.requestId, c);
    },
    async closeOpen(processId, requestId) {
      const calls = callsOf(processId);
      const value = calls.get(requestId);
      calls.delete(requestId);
      return value === "taken" ? "taken" : "closed";
    },
    async silentProcesses(before) {
      return [...heartbeats].filter(([, at]) => at < before).map(([id]) => id);
    },
    async takeOpen(processId, now) {
      const taken: OpenCharge[] = [];
      const calls = callsOf(processId);
      for (const [requestId, value] of calls) {
        if (value === "taken") continue;
        if (value.refundUntil > now) {
          calls.set(requestId, "taken");
          taken.push(value);
        } else calls.delete(requestId);
      }
      heartbeats.delete(processId);
      return taken;
    },
    async leave(processId) {
      heartbeats.delete(processId);
      open.delete(processId);
    },
  };
}
