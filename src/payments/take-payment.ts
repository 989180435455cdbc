import type { Request } from "express";
import { ApiError } from "../http/errors.js";
import type { Services } from "../services.js";
import type { PaymentGrant } from "../store/types.js";
import type { AcceptedPayment } from "./payments.js";
import { offerFor, paymentChallenge, type Offer } from "./offer.js";
import { encodeHeader, readPaymentHeader } from "./wire.js";

/**
 * What every paid resource does with a request: no payment → 402 with the offer (both
 * generations); a malformed or refused payment → 402 with the offer again; a good one →
 * settled and credited, with the settlement receipt for X-PAYMENT-RESPONSE / PAYMENT-RESPONSE.
 * `beforeSettling` runs once a payment is present and before any money moves.
 */
export interface Paid {
  payment: AcceptedPayment;
  receiptHeaders: Record<string, string>;
}

export function offerForResource(services: Services, price: bigint, path: string, description: string): Offer {
  return offerFor(services.payments!.config, price, `${services.config.publicBaseUrl}${path}`, description);
}

export async function takePayment(
  services: Services,
  req: Request,
  offer: Offer,
  price: bigint,
  grant: PaymentGrant,
  options: { beneficiary?: string; requiredMessage: string; beforeSettling?: () => void },
): Promise<Paid> {
  const payments = services.payments!;
  let header;
  try {
    header = readPaymentHeader((name) => req.get(name));
  } catch (err) {
    throw paymentChallenge("payment_invalid", "The payment header is malformed.", offer, { reason: (err as Error).message.slice(0, 300) });
  }
  if (!header) throw paymentChallenge("payment_required", options.requiredMessage, offer);
  options.beforeSettling?.();
  let payment;
  try {
    payment = await payments.accept(header, offer, price, grant, options.beneficiary);
  } catch (err) {
    // A refused payment is answered with the offer again, so the client can pay properly.
    if (err instanceof ApiError && err.code === "payment_invalid") throw paymentChallenge("payment_invalid", err.message, offer, err.options.details);
    throw err;
  }
  const receipt = encodeHeader({ success: true, transaction: payment.txHash, network: payment.network, payer: payment.payer });
  return { payment, receiptHeaders: { "X-PAYMENT-RESPONSE": receipt, "PAYMENT-RESPONSE": receipt } };
}
