import { ApiError } from "../http/errors.js";

/**
 * How a refused payment is told, apart from the verification itself (verify.ts), so that what
 * only needs the verdict's shape (the facilitator API's answers) does not load viem.
 */

/**
 * The x402 specification's error reasons (the `ErrorReasons` of the `x402` package), as far as
 * an EVM "exact" payment can meet them: the facilitator API answers these stable codes.
 */
export type X402Reason =
  | "insufficient_funds"
  | "invalid_exact_evm_payload_authorization_valid_after"
  | "invalid_exact_evm_payload_authorization_valid_before"
  | "invalid_exact_evm_payload_authorization_value"
  | "invalid_exact_evm_payload_signature"
  | "invalid_exact_evm_payload_recipient_mismatch"
  | "invalid_network"
  | "invalid_payload"
  | "invalid_payment_requirements"
  | "invalid_scheme"
  | "invalid_transaction_state"
  | "unsupported_scheme"
  | "invalid_x402_version"
  | "unexpected_verify_error"
  | "unexpected_settle_error";

/** A refused payment: the API's `payment_invalid`, carrying the x402 reason the facilitator API answers. */
export class PaymentRefusal extends ApiError {
  constructor(
    reason: string,
    readonly x402Reason: X402Reason,
  ) {
    super("payment_invalid", `The payment is not valid: ${reason}.`, { details: { reason } });
  }
}
