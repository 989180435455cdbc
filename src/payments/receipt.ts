import { isAddressEqual, parseEventLogs, type Address, type Hex, type Log } from "viem";
import { sameBytes } from "../lib/hex.js";
import { tokenAbi } from "./verify.js";

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

type TokenEvent = { eventName: string; args: Record<string, unknown> };

export function transferInReceipt(receipt: { logs: Log[] }, expected: ExpectedTransfer): boolean {
  const events = parseEventLogs({
    abi: tokenAbi,
    logs: receipt.logs.filter((l) => isAddressEqual(l.address, expected.token)),
  }) as unknown as TokenEvent[];
  const used = events.findIndex(
    (e) =>
      e.eventName === "AuthorizationUsed" &&
      isAddressEqual(e.args.authorizer as Address, expected.from) &&
      sameBytes(e.args.nonce as Hex, expected.nonce),
  );
  const transfer = used < 0 ? undefined : events[used + 1];
  return (
    transfer?.eventName === "Transfer" &&
    isAddressEqual(transfer.args.from as Address, expected.from) &&
    isAddressEqual(transfer.args.to as Address, expected.to) &&
    transfer.args.value === expected.value
  );
}
