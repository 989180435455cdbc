import { z } from "zod";
import type { Request, Response } from "express";
import { requireFeature } from "../accounts/tiers.js";
import {
  authenticate,
  presentedKey,
  requireUnrestrictedKey,
  type KeyCaller,
} from "../http/auth.js";
import { ApiError } from "../http/errors.js";
import { defineRoute } from "../http/route.js";
import { sameBytes } from "../lib/hex.js";
import type { Services } from "../services.js";
import type { Offer } from "./offer.js";
import type { PaymentRequest } from "./payments.js";
import { PaymentRefusal, type X402Reason } from "./refusal.js";
import {
  parsedOrThrow,
  payloadResource,
  readPaymentPayload,
  requirementsV1Schema,
  requirementsV2Schema,
  type PaymentHeader,
} from "./wire.js";

/**
 * Toolgate as an x402 facilitator (`POST /x402/verify`, `POST /x402/settle`), both generations,
 * for resource servers protected by the official middlewares (`x402-express`, `@x402/express`).
 * The payment goes through the very code that takes Toolgate's own payments (Payments.verify /
 * Payments.accept): the same checks, the same exactly-once claim per authorization, the same
 * pending state and reconciler. What differs: the recipient is the requirement's `payTo` (the
 * caller's own address; Toolgate never holds the funds), and the caller is charged
 * FACILITATOR_FEE_CREDITS once the settlement lands instead of being credited.
 *
 * Answers, as the official facilitator clients expect them: 200 with `{isValid, invalidReason?,
 * payer}` / `{success, errorReason?, transaction, network, payer}` for every verdict on the
 * payment, the API's error shape (401/403/429/503) for anything about the caller or the chain.
 */
const facilitatorBody = z.object({
  x402Version: z.union([z.literal(1), z.literal(2)]),
  paymentPayload: z.unknown(),
  paymentRequirements: z.unknown(),
});
type FacilitatorBody = z.infer<typeof facilitatorBody>;

/** Any verdict on the payment: a stable x402 reason and a human message. */
class Verdict extends Error {
  constructor(
    readonly reason: X402Reason,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The caller's key (x-api-key or Bearer), admitted and rate limited in one round trip, with the
 * feature checked: before the body is read, so a caller without a key hears 401 whatever it sent.
 * A key with account controls is refused: a settlement's fee is the account's credits, spent
 * outside any tool (a key held to "hash, 5 credits a day" settled fee after fee past its budget).
 */
async function facilitatorCaller(
  services: Services,
  req: Request,
  res: Response,
  requestId: string,
): Promise<KeyCaller> {
  const caller = await authenticate(services, presentedKey(req, { bearer: true }), requestId);
  for (const [name, value] of Object.entries(caller.headers)) res.setHeader(name, value);
  res.locals.accountId = caller.account.id;
  requireFeature(caller.account.tier, "facilitator");
  requireUnrestrictedKey(caller);
  return caller;
}

/**
 * The longest an authorization settled here may stay valid (its `validBefore` is held to the
 * requirement's `maxTimeoutSeconds`). A payment that stays pending is released once its
 * authorization expires unused, and its fee given back by a refund, which needs the fee's debit
 * record: that lives OPERATION_TTL_SECONDS (a day). Six hours leaves the reconciler the rest.
 */
export const MAX_TIMEOUT_SECONDS = 6 * 3600;

/**
 * The payment and its one requirement, as the request the payment code takes: an offer of
 * exactly that requirement, paid to its `payTo`, for its amount, on a network and token this
 * gateway settles.
 */
function paymentRequest(
  services: Services,
  req: Request,
  body: FacilitatorBody,
  caller: KeyCaller,
): { header: PaymentHeader; request: PaymentRequest } {
  const payments = services.payments;
  if (!payments)
    throw new ApiError(
      "payments_not_enabled",
      "x402 payments are not enabled on this gateway (no X402_NETWORKS configured).",
    );
  let header: PaymentHeader;
  try {
    header = readPaymentPayload(body.x402Version, body.paymentPayload);
  } catch (err) {
    throw new Verdict("invalid_payload", (err as Error).message);
  }
  const requirement = (() => {
    try {
      if (body.x402Version === 1) {
        const r = parsedOrThrow(requirementsV1Schema, body.paymentRequirements);
        return { ...r, amount: r.maxAmountRequired, resourceUrl: r.resource };
      }
      const r = parsedOrThrow(requirementsV2Schema, body.paymentRequirements);
      return { ...r, resourceUrl: payloadResource(body.paymentPayload) ?? "" };
    } catch (err) {
      throw new Verdict("invalid_payment_requirements", (err as Error).message);
    }
  })();
  if (requirement.maxTimeoutSeconds > MAX_TIMEOUT_SECONDS)
    throw new Verdict(
      "invalid_payment_requirements",
      `maxTimeoutSeconds is ${requirement.maxTimeoutSeconds}; this facilitator settles authorizations valid for at most ${MAX_TIMEOUT_SECONDS} s`,
    );
  if (requirement.scheme !== "exact")
    throw new Verdict(
      "unsupported_scheme",
      `the scheme ${requirement.scheme} is not supported (only exact)`,
    );
  const clients = payments.clients.get(requirement.network);
  const named =
    clients &&
    (body.x402Version === 1 ? clients.network.name : clients.network.caip2) === requirement.network;
  if (!clients || !named)
    throw new Verdict(
      "invalid_network",
      `the network ${requirement.network} is not settled by this facilitator`,
    );
  if (!sameBytes(requirement.asset, clients.network.usdc.address))
    throw new Verdict(
      "invalid_payment_requirements",
      `the asset is not the USDC token settled on ${requirement.network}`,
    );
  // Toolgate's own payments go through its own doors, which credit the payer: settled here, one
  // would move the payer's money to Toolgate with nothing credited, and answer their call "used".
  if (sameBytes(requirement.payTo, payments.config.payTo))
    throw new Verdict(
      "invalid_payment_requirements",
      "the payTo is this gateway's own address: a payment to Toolgate is made through its own endpoints",
    );
  if (header.version === 1 && header.network !== requirement.network)
    throw new Verdict(
      "invalid_network",
      `the payment is for ${header.network}, the requirement for ${requirement.network}`,
    );
  // The offer is the requirement itself: a v2 payment's `accepted` must equal it field for field.
  const offer: Offer = {
    v1: [],
    v2: {
      x402Version: 2,
      resource: { url: requirement.resourceUrl, description: "", mimeType: "" },
      accepts:
        body.x402Version === 2
          ? [parsedOrThrow(requirementsV2Schema, body.paymentRequirements)]
          : [],
    },
  };
  return {
    header,
    request: {
      offer,
      priceAtomic: BigInt(requirement.amount),
      grant: {
        credits: 0,
        type: "one_time",
        plan: null,
        planChange: null,
        description: "x402 facilitator settlement",
      },
      beneficiary: caller.account.id,
      payTo: requirement.payTo,
      maxTimeoutSeconds: requirement.maxTimeoutSeconds,
      // Debited once the payment is claimed, before any money moves (Payments.reserveFee).
      facilitator: {
        feeCredits: services.config.facilitatorFeeCredits,
        // The fee's ledger rows name the key that asked (usage by key), as a tool call's do.
        keyHash: presentedKey(req, { bearer: true }).hash,
      },
    },
  };
}

/** A refusal of the payment itself as the x402 verdict; anything else (the chain down, the caller out of credits) is rethrown. */
function verdictOf(err: unknown): Verdict {
  if (err instanceof Verdict) return err;
  if (err instanceof PaymentRefusal) return new Verdict(err.x402Reason, err.message);
  if (err instanceof ApiError && err.code === "payment_already_used")
    return new Verdict("invalid_transaction_state", err.message);
  throw err;
}

const payerOf = (body: FacilitatorBody) => {
  const from = (body.paymentPayload as { payload?: { authorization?: { from?: unknown } } } | null)
    ?.payload?.authorization?.from;
  return typeof from === "string" ? from : "";
};

const verifyResponse = z.object({
  isValid: z.boolean(),
  invalidReason: z.string().optional(),
  invalidMessage: z.string().optional(),
  payer: z.string(),
});
const settleResponse = z.object({
  success: z.boolean(),
  errorReason: z.string().optional(),
  errorMessage: z.string().optional(),
  transaction: z.string(),
  network: z.string(),
  payer: z.string(),
});

export const x402Verify = defineRoute({
  method: "post",
  path: "/verify",
  summary:
    "x402 facilitator: verify a payment against one payment requirement (v1 or v2), claiming nothing. Needs the facilitator feature.",
  auth: "key",
  errors: [
    "feature_not_in_tier",
    "unrestricted_key_required",
    "payments_not_enabled",
    "chain_unavailable",
  ],
  authenticate: facilitatorCaller,
  body: facilitatorBody,
  response: verifyResponse,
  async handler({ services, req, body, caller }) {
    try {
      const { header, request } = paymentRequest(services, req, body, caller);
      const { payer } = await services.payments!.verify(header, request);
      return { body: { isValid: true, payer } };
    } catch (err) {
      const verdict = verdictOf(err);
      return {
        body: {
          isValid: false,
          invalidReason: verdict.reason,
          invalidMessage: verdict.message,
          payer: payerOf(body),
        },
      };
    }
  },
});

export const x402Settle = defineRoute({
  method: "post",
  path: "/settle",
  summary:
    "x402 facilitator: settle a payment to the requirement's payTo, exactly once per authorization, charging the facilitator fee once. A settlement not known yet answers success:false with errorReason unexpected_settle_error; a later settle of the same payment answers its outcome.",
  auth: "key",
  errors: [
    "feature_not_in_tier",
    "unrestricted_key_required",
    "insufficient_credits",
    "payments_not_enabled",
    "chain_unavailable",
  ],
  authenticate: facilitatorCaller,
  body: facilitatorBody,
  response: settleResponse,
  async handler({ services, req, body, caller }) {
    const network = (body.paymentRequirements as { network?: unknown } | null)?.network;
    const failed = (reason: X402Reason, message: string) => ({
      body: {
        success: false,
        errorReason: reason,
        errorMessage: message,
        transaction: "",
        network: typeof network === "string" ? network : "",
        payer: payerOf(body),
      },
    });
    try {
      const { header, request } = paymentRequest(services, req, body, caller);
      const paid = await services.payments!.accept(header, request);
      return {
        body: { success: true, transaction: paid.txHash, network: paid.network, payer: paid.payer },
      };
    } catch (err) {
      // Not known yet: the reconciler finishes it; a later settle of the same payment answers its outcome.
      if (err instanceof ApiError && err.code === "payment_pending")
        return failed("unexpected_settle_error", `payment_pending: ${err.message}`);
      const verdict = verdictOf(err);
      return failed(verdict.reason, verdict.message);
    }
  },
});
