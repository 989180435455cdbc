import { authenticate } from "../http/auth.js";
import { ApiError } from "../http/errors.js";
import { parseInput } from "../http/route.js";
import type { Offer } from "../payments/offer.js";
import { takeDecodedPayment, type Paid } from "../payments/take-payment.js";
import type { PaymentHeader } from "../payments/wire.js";
import type { Services } from "../services.js";
import type { ToolDefinition } from "./definition.js";
import type { Forwarder } from "./forward.js";
import { callFingerprint, invokeTool, type ToolCallResult } from "./invoke.js";
import { formatUsd } from "../lib/money.js";

/**
 * A tool call paid per call with x402, whichever door it came through (REST reads the payment
 * from a header, MCP from `_meta["x402/payment"]`): everything that can refuse the call is
 * checked before any money moves, then verify → claim → settle → credit the wallet's account →
 * invoke under the payment's idempotency key, so a retry of the same payment replays the answer.
 */
export interface PaidToolCall {
  tool: ToolDefinition;
  input: unknown;
  offer: Offer;
  priceAtomic: bigint;
  /** Decodes the payment the request carries: null when none, throws on a malformed one. */
  read: () => PaymentHeader | null;
  /** The client's own Idempotency-Key (REST), else the payment's identifier or the payment itself keys the call. */
  idempotencyKey: string | null;
  requestId: string;
  /** Told once the payment is settled and credited, before the tool runs: a failed call still has a receipt. */
  onPaid: (paid: Paid) => void;
}

export async function callPaidTool(services: Services, call: PaidToolCall, forward: Forwarder): Promise<ToolCallResult> {
  const { tool, input, requestId } = call;
  const paid = await takeDecodedPayment(services, call.read, {
    offer: call.offer,
    priceAtomic: call.priceAtomic,
    grant: { credits: tool.cost, type: "one_time", plan: null, planChange: null, description: tool.name },
    // The call is idempotent on its payment: every retry of it runs (or replays) under one key.
    call: { fingerprint: callFingerprint(tool.name, input), key: call.idempotencyKey },
    requiredMessage: `Send an API key, or pay $${formatUsd(call.priceAtomic)} in USDC for this call with x402.`,
    // Never take money for a call that cannot run: input, availability…
    beforeVerifying: () => {
      parseInput(tool.input, input, "body");
      const unavailable = services.pools.unavailableReason(tool.name);
      if (unavailable) throw new ApiError("tool_unavailable", `The ${tool.name} tool is unavailable: ${unavailable}.`);
    },
    // …nor for one the wallet's account may not make now: its rate-limit slot is taken here
    // (under this request id, which the call's own admission then finds already counted).
    beforeSettling: async (accountId) => void (await authenticate(services, { accountId, hash: null }, requestId)),
  });
  call.onPaid(paid);
  const { payment } = paid;
  return invokeTool(services, { tool, input, key: { accountId: payment.accountId, hash: null }, idempotencyKey: payment.callKey, idempotencyTtlSeconds: payment.retainSeconds, requestId }, forward);
}
