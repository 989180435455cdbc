import {
  hexToBigInt,
  isAddressEqual,
  pad,
  toEventSelector,
  type Address,
  type Hex,
  type Log,
} from "viem";
import { sameBytes } from "../lib/hex.js";

/**
 * The one receipt check, shared by settlement and the reconciler: did this transaction use this
 * authorization and move its money? A transaction may carry many authorizations (a Multicall3
 * batch), some of which failed inside it, so each is judged by its own logs: the token's
 * AuthorizationUsed(authorizer, nonce), and the Transfer(from → to, value) the token emits right
 * after it in the same call (EIP-3009: mark the nonce used, then transfer). Pairing by position
 * keeps apart two authorizations of the same payer and amount in one batch.
 */
export interface ExpectedTransfer {
  token: Address;
  from: Address;
  to: Address;
  value: bigint;
  nonce: Hex;
}

const AUTHORIZATION_USED = toEventSelector("AuthorizationUsed(address,bytes32)");
const TRANSFER = toEventSelector("Transfer(address,address,uint256)");

/**
 * The logs are matched by their topics (both events' arguments but Transfer's value are indexed),
 * not decoded with viem's `parseEventLogs`: that decodes every log of the receipt against the
 * whole token ABI for each payment checked: ~180 µs per payment in a batch of eight, growing
 * with the batch, against ~8 µs here (`npm run bench:receipt-check`).
 */
export function transferInReceipt(receipt: { logs: Log[] }, expected: ExpectedTransfer): boolean {
  const tokenLogs = receipt.logs.filter((l) => isAddressEqual(l.address, expected.token));
  const from = pad(expected.from);
  const used = tokenLogs.findIndex((l) => isEvent(l, AUTHORIZATION_USED, from, expected.nonce));
  const transfer = used < 0 ? undefined : tokenLogs[used + 1];
  return (
    transfer !== undefined &&
    isEvent(transfer, TRANSFER, from, pad(expected.to)) &&
    transfer.data.length === 66 &&
    hexToBigInt(transfer.data) === expected.value
  );
}

/** Whether a log is the event `selector` with exactly these two indexed arguments (as 32-byte topics). */
function isEvent(log: Log, selector: Hex, first: Hex, second: Hex): boolean {
  const [topic, a, b] = log.topics;
  return (
    log.topics.length === 3 &&
    sameBytes(topic!, selector) &&
    sameBytes(a!, first) &&
    sameBytes(b!, second)
  );
}
