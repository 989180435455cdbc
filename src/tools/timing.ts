/**
 * Where a tool call's time went, told to the caller in a `Server-Timing` header (the W3C format
 * browsers' devtools and HTTP clients read): `tool` is the tool's worker, from the call handed to
 * its pool's forwarder to its answer read whole (invoke.ts); `gateway` is the rest, from the
 * request's arrival (http/request-context.ts) to its answer's headers: the key check and debit,
 * the body, a payment's verification and settlement. A call answered without running the tool (a
 * replay) has `gateway` alone. So a caller sees the gateway's own cost on every call, apart from
 * the tool's; `/metrics` has both as histograms.
 */
export interface CallTiming {
  /** The `Server-Timing` header's value; two decimals (10 µs) are finer than anything a caller acts on. */
  header: string;
  /** Milliseconds the gateway took besides the tool. */
  gatewayMs: number;
}

/** The call's timing now, given when its request arrived (process.hrtime.bigint()) and its tool's time. */
export function callTiming(startedAt: bigint, toolMs: number | undefined): CallTiming {
  const totalMs = Number(process.hrtime.bigint() - startedAt) / 1e6;
  if (toolMs === undefined)
    return { header: `gateway;dur=${totalMs.toFixed(2)}`, gatewayMs: totalMs };
  const gatewayMs = Math.max(0, totalMs - toolMs);
  return {
    header: `tool;dur=${toolMs.toFixed(2)}, gateway;dur=${gatewayMs.toFixed(2)}`,
    gatewayMs,
  };
}
