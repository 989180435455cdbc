import {
  BaseError,
  HttpRequestError,
  RpcRequestError,
  TimeoutError,
  getAddress,
  isAddressEqual,
  type Address,
  type Hex,
} from "viem";
import TOKEN_ABI from "../../contracts-abi/eip3009-token.json" with { type: "json" };
import { ApiError } from "../http/errors.js";
import type { NetworkClients } from "./chain.js";
import type { SeenBlock } from "./relayers.js";
import { SECP256K1_N, wellFormedSignature, type Authorization } from "./wire.js";

export const tokenAbi = TOKEN_ABI as typeof TOKEN_ABI;

/** secp256k1 order / 2: a signature with a larger s is the malleable twin of a valid one. */
const HALF_N = SECP256K1_N / 2n;
/** Seconds an authorization must stay valid beyond the current block, for the settlement to land. */
const VALIDITY_MARGIN_S = 6n;
/** Leeway for a client clock ahead of ours when judging an authorization's remaining validity. */
const CLOCK_SKEW_S = 30n;

export const AUTHORIZATION_TYPES = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;

import { PaymentRefusal, type X402Reason } from "./refusal.js";

export { PaymentRefusal, type X402Reason };

export const invalidPayment = (reason: string, x402Reason: X402Reason = "invalid_payload") =>
  new PaymentRefusal(reason, x402Reason);

/**
 * A 65-byte EOA signature with v normalised to 27/28 and a high s refused; anything else (an
 * ERC-1271 wallet's signature) is passed on as is for the wallet to judge.
 */
export function normaliseSignature(signature: Hex): Hex {
  if (signature.length !== 132) return signature;
  // By hand rather than viem's parseSignature and serializeSignature, which build secp256k1
  // curve objects for it: the same checks and answer for a small part of the CPU
  // (test/unit/normalise-signature.test.ts).
  if (!wellFormedSignature(signature))
    throw invalidPayment(
      "the signature is not a valid ECDSA signature",
      "invalid_exact_evm_payload_signature",
    );
  if (BigInt(`0x${signature.slice(66, 130)}`) > HALF_N)
    throw invalidPayment(
      "the signature's s value is high (malleable)",
      "invalid_exact_evm_payload_signature",
    );
  const v = Number.parseInt(signature.slice(130), 16);
  return `0x${signature.slice(2, 130).toLowerCase()}${v === 0 || v === 27 ? "1b" : "1c"}`;
}

export interface Expected {
  payTo: Address;
  price: bigint;
  /** The offer's `maxTimeoutSeconds`: an authorization may not stay valid for longer than this from now. */
  maxTimeoutSeconds: number;
}

/** The EIP-3009 message an authorization signs, as typed values. */
export function authorizationMessage(auth: Authorization) {
  return {
    from: getAddress(auth.from),
    to: getAddress(auth.to),
    value: BigInt(auth.value),
    validAfter: BigInt(auth.validAfter),
    validBefore: BigInt(auth.validBefore),
    nonce: auth.nonce as Hex,
  };
}

/**
 * What holds of the authorization itself, whatever the chain's state: it pays our recipient the
 * exact price, and it is signed by its `from` (EOA or ERC-1271, via viem) for this token and chain.
 */
export async function verifySigned(
  clients: NetworkClients,
  auth: Authorization,
  signature: Hex,
  expected: Expected,
): Promise<void> {
  verifyTerms(auth, expected);
  await verifySignature(clients, auth, signature);
}

/** The authorization pays our recipient the exact price (no chain, no cryptography). */
export function verifyTerms(auth: Authorization, expected: Expected): void {
  if (!isAddressEqual(auth.to as Address, expected.payTo))
    throw invalidPayment(
      "it pays the wrong recipient",
      "invalid_exact_evm_payload_recipient_mismatch",
    );
  if (BigInt(auth.value) !== expected.price)
    throw invalidPayment(
      `the amount must be exactly ${expected.price} atomic units`,
      "invalid_exact_evm_payload_authorization_value",
    );
}

/**
 * The authorization is signed by its `from` for this token and chain: an EOA's signature by
 * recovery (no RPC), a smart wallet's (ERC-1271 / ERC-6492) asked of the chain. A new payment's
 * signature is also proven by verifyChainState's simulation (the token itself checks it), so
 * `Payments.accept` runs this only where that proof is missing: a payment already known, and a
 * refusal (to name a bad signature as such). decisions.md, "One signature check per paid call".
 */
export async function verifySignature(
  clients: NetworkClients,
  auth: Authorization,
  signature: Hex,
): Promise<void> {
  const { network } = clients;
  const message = authorizationMessage(auth);
  const signatureOk = await clients.public
    .verifyTypedData({
      address: message.from,
      domain: {
        name: network.usdc.name,
        version: network.usdc.version,
        chainId: network.chainId,
        verifyingContract: network.usdc.address,
      },
      types: AUTHORIZATION_TYPES,
      primaryType: "TransferWithAuthorization",
      message,
      signature,
      // An EOA's signature is checked here, by recovery, with no RPC; only one that recovers to
      // someone else (a smart wallet's, ERC-1271 / ERC-6492) is asked of the chain.
      mode: "eoa",
    })
    .catch((err: unknown) => {
      // An RPC that did not answer is ours to report (503); anything else is a signature that cannot be checked.
      if (isRpcFailure(err)) throw err;
      return false;
    });
  if (!signatureOk)
    throw invalidPayment(
      "the signature does not match the authorization, token or chain",
      "invalid_exact_evm_payload_signature",
    );
}

/**
 * What the chain must say before money moves (EIP-3009 and the x402 exact scheme): the time window
 * against block time (and no longer than `maxTimeoutSeconds` ahead), then a simulation of the
 * transfer itself. The token's own checks make the simulation the proof of the rest: it reverts
 * for an authorization already used, a balance too low, or a signature not made by `from` for its
 * own domain. So an acceptable payment costs two reads, made together, which the batching
 * transport (chain.ts) sends as one JSON-RPC batch: one round trip. Only a refused simulation
 * reads `authorizationState` and the balance (a second round trip), to name the refusal. The
 * block read is returned: its base fee prices the settlement.
 */
export async function verifyChainState(
  clients: NetworkClients,
  auth: Authorization,
  signature: Hex,
  expected: Expected,
): Promise<SeenBlock> {
  const message = authorizationMessage(auth);
  // The simulation's verdict is used only if the time window passed.
  const simulation = clients.public
    .simulateContract({
      ...tokenOf(clients),
      functionName: "transferWithAuthorization",
      args: transferArgs(message, signature) as never,
      account: clients.relayers[0]!,
    })
    .then(
      () => null,
      (err: { shortMessage?: string }) => err.shortMessage ?? "reverted",
    );
  const [block, simulationError] = await Promise.all([
    clients.public.getBlock({ blockTag: "latest" }),
    simulation,
  ]);
  const wallClock = BigInt(Math.floor(Date.now() / 1000));
  const now = block.timestamp > wallClock ? block.timestamp : wallClock;
  if (message.validAfter >= block.timestamp)
    throw invalidPayment(
      "the authorization is not valid yet",
      "invalid_exact_evm_payload_authorization_valid_after",
    );
  if (message.validBefore <= now + VALIDITY_MARGIN_S)
    throw invalidPayment(
      "the authorization has expired",
      "invalid_exact_evm_payload_authorization_valid_before",
    );
  if (message.validBefore - now > BigInt(expected.maxTimeoutSeconds) + CLOCK_SKEW_S) {
    throw invalidPayment(
      `the authorization stays valid for ${message.validBefore - now} s, longer than maxTimeoutSeconds (${expected.maxTimeoutSeconds} s)`,
      "invalid_exact_evm_payload_authorization_valid_before",
    );
  }
  if (simulationError) throw await namedRefusal(clients, message, simulationError);
  return { number: block.number, baseFeePerGas: block.baseFeePerGas };
}

/** Why the chain refused a transfer's simulation, in the words the x402 error codes use. */
async function namedRefusal(
  clients: NetworkClients,
  message: ReturnType<typeof authorizationMessage>,
  simulationError: string,
): Promise<ApiError> {
  const [used, balance] = await Promise.all([
    authorizationUsed(clients, message.from, message.nonce),
    clients.public.readContract({
      ...tokenOf(clients),
      functionName: "balanceOf",
      args: [message.from],
    }) as Promise<bigint>,
  ]);
  if (used)
    return new ApiError(
      "payment_already_used",
      "This payment authorization has already been used.",
      { askedChain: true },
    );
  if (balance < message.value)
    return invalidPayment("the payer's balance is too low", "insufficient_funds");
  return invalidPayment(
    `the transfer would fail on chain (${simulationError})`,
    "invalid_transaction_state",
  );
}

/** The network's token contract, as viem's contract calls take it. */
const tokenOf = (clients: NetworkClients) =>
  ({ address: clients.network.usdc.address, abi: tokenAbi }) as const;

/** Whether the token has recorded this authorization as used (EIP-3009 `authorizationState`). */
export const authorizationUsed = (clients: NetworkClients, from: Address, nonce: Hex) =>
  clients.public.readContract({
    ...tokenOf(clients),
    functionName: "authorizationState",
    args: [from, nonce],
  }) as Promise<boolean>;

const isRpcFailure = (err: unknown) =>
  err instanceof BaseError &&
  err.walk(
    (e) =>
      e instanceof HttpRequestError || e instanceof TimeoutError || e instanceof RpcRequestError,
  ) !== null;

/** Arguments of the (v, r, s) form for a 65-byte signature, of the (bytes) form otherwise. */
export function transferArgs(
  m: {
    from: Address;
    to: Address;
    value: bigint;
    validAfter: bigint;
    validBefore: bigint;
    nonce: Hex;
  },
  signature: Hex,
): readonly unknown[] {
  const base = [m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce] as const;
  if (signature.length !== 132) return [...base, signature];
  const v = Number.parseInt(signature.slice(130), 16);
  const r = `0x${signature.slice(2, 66)}`;
  const s = `0x${signature.slice(66, 130)}`;
  return [...base, v < 27 ? v + 27 : v, r, s];
}
