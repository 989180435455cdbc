import type { Request } from "express";
import { ApiError } from "../http/errors.js";
import type { Services } from "../services.js";
import type { AcceptedPayment, PaymentRequest } from "./payments.js";
import { offerFor, paymentChallenge, type Offer } from "./offer.js";
import type { PaymentReceipt } from "./paid-answer-document.js";
import { encodeHeader, paymentIdentifier, readPaymentHeader, type PaymentHeader } from "./wire.js";

/**
 * What every paid resource does with a request: no payment → 402 with the offer (both
 * generations); a malformed or refused payment → 402 with the offer again; a good one →
 * settled and credited, with the settlement receipt for X-PAYMENT-RESPONSE / PAYMENT-RESPONSE.
 * `beforeVerifying` runs first, before the offer is made or the chain asked anything: a request
 * that cannot be served (a tool's invalid input) is refused as such, and no payer is invited to
 * sign for it; `beforeSettling` once the payer is proven, before any money moves.
 */
export interface Paid {
  payment: AcceptedPayment;
  /** The settlement receipt (x402 SettleResponse): a header's JSON, or MCP's `_meta["x402/payment-response"]`. */
  receipt: PaymentReceipt;
  receiptHeaders: Record<string, string>;
}

export function offerForResource(
  services: Services,
  price: bigint,
  path: string,
  description: string,
  extensions?: readonly Record<string, unknown>[],
): Offer {
  return offerFor(
    services.payments!.config,
    price,
    `${services.config.publicBaseUrl}${path}`,
    description,
    extensions,
  );
}

/**
 * Whether a keyless caller's refused payment counts against its address (`x402-refused`): every
 * `payment_invalid`, and any other refusal the chain was asked for (an authorization used on
 * chain with no record here: 409). A payment this gateway settled, answered again from its own
 * records (a retry, or a 409 for another resource or call), costs no chain call and is not counted.
 */
export const countsAsRefused = (err: unknown): boolean =>
  err instanceof ApiError && (err.code === "payment_invalid" || err.options.askedChain === true);

/** The REST door: the payment is read from the `PAYMENT-SIGNATURE` / `X-PAYMENT` header. */
export async function takePayment(
  services: Services,
  req: Request,
  request: PaymentRequest & { requiredMessage: string; beforeVerifying?: () => void },
): Promise<Paid> {
  return takeDecodedPayment(services, () => readPaymentHeader((name) => req.get(name)), request);
}

/**
 * The core every door shares: `read` decodes the payment the request carries (null: none; throws
 * on a malformed one), whichever way the door carries it — an HTTP header, or MCP's `_meta`.
 */
export async function takeDecodedPayment(
  services: Services,
  read: () => PaymentHeader | null,
  request: PaymentRequest & { requiredMessage: string; beforeVerifying?: () => void },
): Promise<Paid> {
  const payments = services.payments!;
  const { offer } = request;
  request.beforeVerifying?.();
  let header;
  let identifier: string | null;
  try {
    header = read();
    identifier = header ? paymentIdentifier(header) : null;
  } catch (err) {
    throw paymentChallenge("payment_invalid", "The payment is malformed.", offer, {
      reason: (err as Error).message.slice(0, 300),
    });
  }
  if (!header) throw paymentChallenge("payment_required", request.requiredMessage, offer);
  // A client-chosen payment identifier (x402 payment-identifier) keys the call like an Idempotency-Key.
  const call = request.call
    ? { ...request.call, key: request.call.key ?? (identifier ? `pid:${identifier}` : null) }
    : undefined;
  let payment;
  try {
    payment = await payments.accept(header, { ...request, call });
  } catch (err) {
    // A refused payment is answered with the offer again, so the client can pay properly.
    if (err instanceof ApiError && err.code === "payment_invalid")
      throw paymentChallenge("payment_invalid", err.message, offer, err.options.details);
    throw err;
  }
  // Its shape is the one the API description gives (paid-answer-document.ts).
  const receipt: PaymentReceipt = {
    success: true,
    transaction: payment.txHash,
    network: payment.network,
    payer: payment.payer,
  };
  const encoded = encodeHeader(receipt);
  return {
    payment,
    receipt,
    receiptHeaders: { "X-PAYMENT-RESPONSE": encoded, "PAYMENT-RESPONSE": encoded },
  };
}
