import { admitted, authenticate, type Admitted } from "../http/auth.js";
import { ApiError } from "../http/errors.js";
import type { Offer } from "../payments/offer.js";
import type { AcceptedPayment } from "../payments/payments.js";
import { takeDecodedPayment, type Paid } from "../payments/take-payment.js";
import type { PaymentHeader } from "../payments/wire.js";
import type { Services } from "../services.js";
import type { ToolDefinition } from "./definition.js";
import type { Forwarder } from "./forward.js";
import type { StoredResponse } from "../store/types.js";
import { preflight } from "./preflight.js";
import {
  answerNotKept,
  callFingerprint,
  claimIdempotencyKey,
  failureReplayed,
  idempotencyLeaseMs,
  invokeTool,
  replayOf,
  type ToolCallResult,
} from "./invoke.js";
import { formatUsd } from "../lib/money.js";
import { formatCredits } from "./pricing.js";

/**
 * A tool call paid per call with x402, whichever door it came through (REST reads the payment
 * from a header, MCP from `_meta["x402/payment"]`): everything that can refuse the call is
 * checked before any money moves, then verify → claim → settle → credit the wallet's account (or
 * the account of the API key sent with the payment) → invoke under the payment's idempotency key,
 * so a retry of the same payment replays the answer.
 * A key the client chose (Idempotency-Key, x402 payment identifier) is claimed before settling: a
 * new authorization under a key already used is answered from its record and never settled.
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
  /**
   * The API key sent with the payment (REST `x-api-key`): the payment buys credits for the key's
   * account and the call is the key's, so its controls (expiry, tools, budget) hold — checked,
   * with the key itself, before the payment is even read. Absent: the wallet's own account.
   */
  key?: { accountId: string; hash: string };
  /** The door counted this call against the key's rate limit already (MCP counts every message). */
  counted?: boolean;
  requestId: string;
  /** Told once the payment is settled and credited, before the tool runs: a failed call still has a receipt. */
  onPaid: (paid: Paid) => void;
  /** Why the door could not write the tool's answer (ToolCall.unwritable). */
  unwritable?: (body: Buffer) => string | null;
}

export async function callPaidTool(
  services: Services,
  call: PaidToolCall,
  forward: Forwarder,
): Promise<ToolCallResult> {
  const { tool, input, requestId, key } = call;
  const started = performance.now();
  const fingerprint = callFingerprint(tool.name, input);
  // The client's own key (its Idempotency-Key or payment identifier), once claimed before settling.
  let held = null as HeldKey | null;
  // The caller as the request was counted: a keyed call by its key's check, a keyless one by the
  // wallet account's slot taken before settling (null until then). The call's own admission then
  // counts nothing and knows nothing of the window, so every answer (served, replayed or failed)
  // states the rate limit from here.
  const checked = key ? await checkKey(services, key, tool, requestId, !call.counted) : null;
  let counter: Admitted | null = checked;
  const rate = () => counter?.headers ?? {};
  // The cost the key's check held in its budget, given back if the call is not debited.
  const budgetHold = checked?.budgetHeld ? requestId : undefined;
  const releaseHold = async () => {
    if (budgetHold)
      await services.store
        .releaseBudgetHold(key!.accountId, budgetHold)
        .catch((err: unknown) =>
          services.log.warn({ err }, "a budget hold could not be given back; it ends by itself"),
        );
  };
  let paid: Paid;
  try {
    paid = await takeDecodedPayment(services, call.read, {
      offer: call.offer,
      priceAtomic: call.priceAtomic,
      grant: {
        credits: tool.cost,
        type: "one_time",
        plan: null,
        planChange: null,
        description: tool.name,
      },
      // The call is idempotent on its payment: every retry of it runs (or replays) under one key.
      call: { fingerprint, key: call.idempotencyKey, conflict: () => keyConflict(call) },
      beneficiary: key?.accountId,
      requiredMessage: `Send an API key, or pay $${formatUsd(call.priceAtomic)} in USDC for this call with x402.`,
      // Never take money for a call that cannot run: input, availability…
      beforeVerifying: () => void preflight(services, tool, input),
      // …nor for one the wallet's account may not make now: its rate-limit slot is taken here, a
      // keyed call's by its key's check (the call's own admission then counts nothing: `counter`)…
      beforeSettling: async (accountId, keyed) => {
        counter ??= await authenticate(services, { accountId, hash: null }, requestId);
        // …nor for one already answered: a new authorization under a key the client already used
        // (a payment identifier, an Idempotency-Key) is answered from that key's record, or waits
        // for the call running (or still settling) under it, and is never settled itself.
        if (keyed?.key)
          held = {
            accountId,
            key: keyed.key,
            requestId: await claimCallKey(services, call, accountId, keyed.key, fingerprint),
          };
      },
    });
  } catch (err) {
    await releaseHold();
    // Thrown by claimCallKey in beforeSettling, once the caller was counted there or before.
    if (err instanceof AnsweredUnpaid) return replayOf(err.response, counter!);
    // Not run: whoever comes next with this key runs the call (or pays for it) instead.
    if (held) await forget(services, held);
    throw err;
  }
  call.onPaid(paid);
  const paymentMs = performance.now() - started;
  const { payment } = paid;
  // The payment may already have been claimed under another key (the same authorization sent with another identifier).
  if (held && held.key !== payment.callKey) await forget(services, held);
  const runAs = held?.key === payment.callKey ? held.requestId : requestId;
  // The payment's record is saved as settled beside the call's admission, and before the answer.
  const recorded = payment.recorded?.catch((err: unknown) => {
    // The credit stands and the payment stays open: the reconciler finishes its record.
    services.log.error(
      { err, payment: payment.id },
      "a settled payment's record could not be saved; the reconciler will finish it",
    );
  });
  const answer = invokeTool(
    services,
    {
      tool,
      input,
      key: key ?? { accountId: payment.accountId, hash: null },
      idempotencyKey: payment.callKey,
      idempotencyTtlSeconds: payment.retainSeconds,
      requestId: runAs,
      // Its rate-limit slot was taken before the payment settled (beforeSettling above), if it was settled here.
      counted: counter !== null,
      ...(budgetHold ? { budgetHold } : {}),
      ...(call.unwritable ? { unwritable: call.unwritable } : {}),
    },
    forward,
  );
  let result: ToolCallResult;
  try {
    result = (await Promise.all([answer, recorded]))[0];
  } catch (err) {
    throw err instanceof ApiError
      ? stillCredited(err, tool, payment, key !== undefined).withHeaders(rate())
      : err;
  } finally {
    // Its debit took the hold over; a call answered without one (a replay) gives it back here.
    await releaseHold();
  }
  return { ...result, headers: { ...result.headers, ...rate() }, paymentMs };
}

/**
 * A paid call that failed once its payment was credited: "the call was not charged" alone reads,
 * to a payer whose USDC has moved, as "nothing happened", and an x402 client retrying would sign
 * and pay again while the first payment's credits stay unused. The answer says where the money
 * is and how to use it: the same payment, sent again for the same call, runs on those credits —
 * except after the tool refused the input (422), which the same call would meet again.
 * Said only of a payment that credited this call's price, and never when the call found the
 * account short (402): then that payment's credits were spent since (the call ran on a payment
 * made earlier for it, under the same key), and sending it again would meet the same 402.
 */
function stillCredited(
  err: ApiError,
  tool: ToolDefinition,
  payment: AcceptedPayment,
  keyed: boolean,
): ApiError {
  // The same payment again, for a call served whose answer was not kept: it pays for nothing more.
  if (err.code === "idempotency_answer_not_kept")
    return answerNotKept(payment.clientKeyed ? "payment identifier" : "payment");
  const where = keyed ? "this API key's account" : "the paying wallet's account";
  if (err.code === "insufficient_credits") {
    const anew = payment.clientKeyed
      ? "with a new authorization under another Idempotency-Key or payment identifier (one key's call has one payment)"
      : "with a new authorization";
    return new ApiError(
      err.code,
      `${err.message} The payment for this call was credited to ${where} (${formatCredits(payment.credits)}) when it was made, and those credits have been spent since: it pays for nothing more. Pay for this call ${anew}.`,
      err.options,
    );
  }
  if (payment.credits < tool.cost) return err;
  const use =
    err.code !== "validation_failed"
      ? `send this call again with the same payment${keyed ? " (or with the key alone)" : ""} to run it on those credits without paying again`
      : keyed
        ? "the key's calls spend them"
        : "an API key for the wallet's account (POST /api/v1/wallet/challenge, then /api/v1/wallet/claim) spends them";
  return new ApiError(
    err.code,
    `${err.message} The payment was credited to ${where} (${formatCredits(payment.credits)}) and stays there: ${use}.`,
    err.options,
  );
}

/**
 * Checks the API key sent with a payment: the key and its controls for the call's cost (budget
 * included), the request counted against its rate limit, whatever the balance — refused as any
 * keyed call is (401, 403, 402 `key_budget_exceeded`, 429) before the payment is read. Debits
 * nothing, but holds the cost in a budgeted key's budget under `requestId` until the call's debit
 * (so calls checked side by side cannot all pass, pay, and then be refused by the budget).
 */
async function checkKey(
  services: Services,
  key: { accountId: string; hash: string },
  tool: ToolDefinition,
  requestId: string,
  countRequest: boolean,
): Promise<Admitted & { budgetHeld: boolean }> {
  const outcome = await services.store.admit({
    accountId: key.accountId,
    keyHash: key.hash,
    cost: tool.cost,
    requestId,
    tool: tool.name,
    reason: "",
    countRequest,
    checkOnly: true,
    budgetHold: requestId,
  });
  return {
    ...admitted(outcome),
    budgetHeld: outcome.status === "ok" && outcome.budgetHeld === true,
  };
}

/** The client's key for a paid call, claimed before its payment settled, and the request id its execution runs under. */
interface HeldKey {
  accountId: string;
  key: string;
  requestId: string;
}

/** A paid call answered from its idempotency record before its payment was settled. */
class AnsweredUnpaid {
  constructor(readonly response: StoredResponse) {}
}

/**
 * Claims the client's key for this call before its payment settles, for as long as settling and
 * running may take; answers the request id to run under (another's, when taking over the claim of
 * a process that died). Throws AnsweredUnpaid with the stored answer, or 409 for another call.
 */
async function claimCallKey(
  services: Services,
  call: PaidToolCall,
  accountId: string,
  key: string,
  fingerprint: string,
): Promise<string> {
  const payments = services.payments!;
  const claim = await claimIdempotencyKey(services, accountId, key, {
    fingerprint,
    requestId: call.requestId,
    leaseMs: payments.settlingDeadlineMs + idempotencyLeaseMs(services, call.tool),
    ttlSeconds: payments.config.retentionSeconds,
  });
  if (claim.state === "started") return claim.requestId;
  if (claim.state === "completed") throw new AnsweredUnpaid(claim.response);
  if (claim.state === "not_kept")
    throw answerNotKept(call.idempotencyKey ? "Idempotency-Key" : "payment identifier");
  // The call it waited on failed: the same answer, and nothing settled for this one.
  if (claim.state === "failed") throw failureReplayed(claim.failure);
  throw keyConflict(call);
}

/**
 * Another call (tool or body) under the client's key than the one it was first used for: whether
 * the key's idempotency record says so, or the payment the key's call already has (its call
 * failed and was refunded, its record dropped). Nothing was settled for this request.
 */
function keyConflict(call: PaidToolCall): ApiError {
  const named = call.idempotencyKey ? "Idempotency-Key" : "payment identifier";
  return new ApiError(
    "idempotency_conflict",
    `This ${named} was already used for a call with a different body or tool; nothing was charged.`,
    { param: call.idempotencyKey ? "Idempotency-Key" : "payment" },
  );
}

const forget = (services: Services, held: HeldKey) =>
  services.store.abandonIdempotent(held.accountId, held.key).catch(() => undefined);
