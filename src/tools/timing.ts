/**
 * Where a tool call's time went, told to the caller in a `Server-Timing` header (the W3C format
 * browsers' devtools and HTTP clients read):
 * - `tool`: the tool's worker, from the call handed to its pool's forwarder to its answer read
 *   whole (invoke.ts); absent when the answer was a replay (no tool ran);
 * - `payment`: a call paid with x402, its payment taken: checked, verified and settled on chain,
 *   credited (paid-call.ts); absent otherwise;
 * - `gateway`: the rest, from the request's arrival (http/request-context.ts) to its answer's
 *   headers: the key check and debit, the body, the stored answer's lookup.
 * So every caller sees the gateway's own cost apart from the tool's and the chain's; `/metrics`
 * has the same split (http/metrics.ts).
 */
export interface CallTiming {
  /** The `Server-Timing` header's value; two decimals (10 µs) are finer than anything a caller acts on. */
  header: string;
  /** Milliseconds the gateway took besides the tool and the payment. */
  gatewayMs: number;
}

/** The call's timing now, given when its request arrived (process.hrtime.bigint()) and what it spent where. */
export function callTiming(
  startedAt: bigint,
  { toolMs, paymentMs }: { toolMs?: number; paymentMs?: number },
): CallTiming {
  const totalMs = Number(process.hrtime.bigint() - startedAt) / 1e6;
  const gatewayMs = Math.max(0, totalMs - (toolMs ?? 0) - (paymentMs ?? 0));
  const metrics = [
    ...(toolMs === undefined ? [] : [`tool;dur=${toolMs.toFixed(2)}`]),
    ...(paymentMs === undefined ? [] : [`payment;dur=${paymentMs.toFixed(2)}`]),
    `gateway;dur=${gatewayMs.toFixed(2)}`,
  ];
  return { header: metrics.join(", "), gatewayMs };
}
