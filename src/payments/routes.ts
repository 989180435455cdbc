import { z } from "zod";
import { accountView, accountViewSchema } from "../accounts/views.js";
import { ApiError, type ErrorCode } from "../http/errors.js";
import { defineRoute, type AnyRoute } from "../http/route.js";
import type { Services } from "../services.js";
import { atomicPrice, formatUsd } from "../lib/money.js";
import { notPurchasable, planAvailability } from "./plan-availability.js";
import { PACKS, PLANS, type PackName, type PlanName } from "./price-list.js";
import { walletChallenge, walletClaim } from "./sign-in.js";
import { offerForResource, takePayment } from "./take-payment.js";
import { paymentHeaderParameters, paymentReceiptHeaders } from "./paid-answer-document.js";

/**
 * Buying credits and plans with x402, for the calling (keyed) account: the first request gets the
 * 402 offer; the paid retry settles, credits the account and answers with the settlement receipt.
 */
const purchaseResult = z.object({
  credits_added: z.number().int(),
  account: accountViewSchema,
  transaction: z.string(),
  network: z.string(),
});

function requirePayments(services: Services) {
  if (!services.payments)
    throw new ApiError(
      "payments_not_enabled",
      "x402 payments are not enabled on this gateway (no X402_NETWORKS configured); credits can be granted by its operator.",
    );
}

/** What a purchase answers beyond its key and body: the offer (402) first, then the payment's fate. */
const PURCHASE_ERRORS: ErrorCode[] = [
  "payment_required",
  "payment_invalid",
  "payment_already_used",
  "payment_pending",
  "chain_unavailable",
  "payments_not_enabled",
];

/** What a purchase's payment header carries: the payment of the 402's offer, beside the key. */
const PAYING_THE_OFFER = "paying the offer of this request's 402, sent with the API key";

export const purchaseCredits = defineRoute({
  method: "post",
  path: "/credits/purchase",
  summary: "Buy a credit pack with an x402 payment (1k, 5k or 25k credits at the credit price).",
  auth: "key",
  errors: PURCHASE_ERRORS,
  successStatus: 201,
  requestHeaders: paymentHeaderParameters(PAYING_THE_OFFER),
  successHeaders: paymentReceiptHeaders("The pack's payment"),
  body: z.strictObject({ pack: z.enum(Object.keys(PACKS) as [PackName, ...PackName[]]) }),
  response: purchaseResult,
  async handler({ services, req, caller, body }) {
    requirePayments(services);
    const credits = PACKS[body.pack];
    const price = atomicPrice(credits, services.config.creditPriceAtomic);
    const offer = offerForResource(
      services,
      price,
      "/api/v1/credits/purchase",
      `${credits} Toolgate credits`,
    );
    const { payment, receiptHeaders } = await takePayment(services, req, {
      offer,
      priceAtomic: price,
      grant: {
        credits,
        type: "one_time",
        plan: null,
        planChange: null,
        description: `pack ${body.pack}`,
      },
      beneficiary: caller.account.id,
      requiredMessage: `Pay $${formatUsd(price)} in USDC with x402 for ${credits} credits.`,
    });
    const account = (await services.store.getAccount(caller.account.id))!;
    return {
      status: 201,
      headers: receiptHeaders,
      body: {
        credits_added: credits,
        account: accountView(account),
        transaction: payment.txHash,
        network: payment.network,
      },
    };
  },
});

export const purchasePlan = defineRoute({
  method: "post",
  path: "/plans/purchase",
  summary:
    "Buy or renew the Starter or Pro plan with an x402 payment: the tier and its monthly credits for 30 days (a renewal extends the period; an upgrade adds the lower plan's unused time, valued at the two plans' prices).",
  auth: "key",
  // A plan changes the account's tier (and can be refused for it): the account's owner decides,
  // not a key handed out with limits. Credits only add, so a limited key may still buy them.
  unrestrictedKey: true,
  errors: [...PURCHASE_ERRORS, "plan_not_purchasable"],
  successStatus: 201,
  requestHeaders: paymentHeaderParameters(PAYING_THE_OFFER),
  successHeaders: paymentReceiptHeaders("The plan's payment"),
  body: z.strictObject({ plan: z.enum(Object.keys(PLANS) as [PlanName, ...PlanName[]]) }),
  response: purchaseResult.extend({
    plan: z.string(),
    type: z
      .enum(["subscription", "renewal", "one_time"])
      .describe(
        "What the payment did: started the plan, or extended its period; one_time: the account had meanwhile come to hold a higher tier, or this one without an end date, which it keeps; the credits were added.",
      ),
    plan_expires_at: accountViewSchema.shape.plan_expires_at,
  }),
  async handler({ services, req, caller, body }) {
    requirePayments(services);
    const plan = PLANS[body.plan];
    const current = caller.account;
    // The store applies the same rule when the payment is credited (the account may change meanwhile).
    const availability = planAvailability(current, body.plan, Date.now());
    if (!availability.purchasable) throw notPurchasable(availability, body.plan);
    const { type } = availability;
    const offer = offerForResource(
      services,
      plan.priceAtomic,
      "/api/v1/plans/purchase",
      `Toolgate ${body.plan} plan, ${type}, 30 days`,
    );
    const { payment, receiptHeaders } = await takePayment(services, req, {
      offer,
      priceAtomic: plan.priceAtomic,
      grant: {
        credits: plan.credits,
        type,
        plan: body.plan,
        planChange: { tier: plan.tier, periodMs: services.config.planPeriodMs },
        // No type here: whether it starts or renews the plan is decided when it is credited.
        description: `plan ${body.plan}`,
      },
      beneficiary: current.id,
      requiredMessage: `Pay $${formatUsd(plan.priceAtomic)} in USDC with x402 for the ${body.plan} plan.`,
    });
    const view = accountView((await services.store.getAccount(current.id))!);
    return {
      status: 201,
      headers: receiptHeaders,
      body: {
        credits_added: plan.credits,
        account: view,
        transaction: payment.txHash,
        network: payment.network,
        plan: body.plan,
        type: payment.type,
        plan_expires_at: view.plan_expires_at,
      },
    };
  },
});

export const paymentRoutes: AnyRoute[] = [
  purchaseCredits,
  purchasePlan,
  walletChallenge,
  walletClaim,
];
