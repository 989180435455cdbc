import type { Forwarder } from "./forward.js";

/**
 * Where a tool call's time went, told to the caller in a `Server-Timing` header (the W3C format
 * browsers' devtools and HTTP clients read): `tool` is the tool's worker, from the call handed to
 * it to its answer read whole; `gateway` is the rest, from the request's arrival to its answer's
 * headers (the key check and debit, the body, a payment's verification and settlement). A call
 * answered without running the tool (a replay) has `gateway` alone. So a caller sees the gateway's
 * own cost on every call, apart from the tool's.
 */
export interface CallTiming {
  /** process.hrtime.bigint() when the request arrived (http/request-context.ts). */
  readonly startedAt: bigint | undefined;
  /** Milliseconds the tool's worker took, once it has answered. */
  toolMs: number | null;
}

export const newCallTiming = (startedAt: bigint | undefined): CallTiming => ({
  startedAt,
  toolMs: null,
});

/** `forward`, with the time its call takes written to `timing`. */
export function timedForwarder(forward: Forwarder, timing: CallTiming): Forwarder {
  return async (call) => {
    const started = performance.now();
    try {
      return await forward(call);
    } finally {
      timing.toolMs = performance.now() - started;
    }
  };
}

/** The header's value now: two decimals (10 µs) are finer than anything a caller acts on. */
export function serverTiming({ startedAt, toolMs }: CallTiming): string | null {
  if (startedAt === undefined) return null;
  const totalMs = Number(process.hrtime.bigint() - startedAt) / 1e6;
  if (toolMs === null) return `gateway;dur=${totalMs.toFixed(2)}`;
  return `tool;dur=${toolMs.toFixed(2)}, gateway;dur=${Math.max(0, totalMs - toolMs).toFixed(2)}`;
}
