import { getAddress, isAddressEqual, parseSignature, serializeSignature, type Address, type Hex } from "viem";
import TOKEN_ABI from "../../contracts-abi/eip3009-token.json" with { type: "json" };
import { ApiError } from "../http/errors.js";
import type { NetworkClients } from "./chain.js";
import type { Authorization } from "./wire.js";

export const tokenAbi = TOKEN_ABI as typeof TOKEN_ABI;

/** secp256k1 order / 2: a signature with a larger s is the malleable twin of a valid one. */
const HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;
/** Seconds an authorization must stay valid beyond the current block, for the settlement to land. */
const VALIDITY_MARGIN_S = 6n;

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

export const invalidPayment = (reason: string) => new ApiError("payment_invalid", `The payment is not valid: ${reason}.`, { details: { reason } });

/**
 * A 65-byte EOA signature with v normalised to 27/28 and a high s refused; anything else (an
 * ERC-1271 wallet's signature) is passed on as is for the wallet to judge.
 */
export function normaliseSignature(signature: Hex): Hex {
  if (signature.length !== 132) return signature;
  const parsed = parseSignature(signature);
  if (BigInt(parsed.s) > HALF_N) throw invalidPayment("the signature's s value is high (malleable)");
  return serializeSignature({ r: parsed.r, s: parsed.s, yParity: parsed.yParity ?? (Number(parsed.v) - 27 === 1 ? 1 : 0) });
}

/**
 * Every check before money moves (DESIGN "Facts"): recipient, exact amount, the EIP-712
 * signature (EOA or ERC-1271, via viem), the time window against block time, that the
 * authorization is unused, the balance, and a simulation of the transfer itself.
 */
export async function verifyAuthorization(
  clients: NetworkClients,
  auth: Authorization,
  signature: Hex,
  expected: { payTo: Address; price: bigint },
): Promise<void> {
  const { network } = clients;
  if (!isAddressEqual(auth.to as Address, expected.payTo)) throw invalidPayment("it pays the wrong recipient");
  if (BigInt(auth.value) !== expected.price) throw invalidPayment(`the amount must be exactly ${expected.price} atomic units`);
  const from = getAddress(auth.from);
  const message = {
    from,
    to: getAddress(auth.to),
    value: BigInt(auth.value),
    validAfter: BigInt(auth.validAfter),
    validBefore: BigInt(auth.validBefore),
    nonce: auth.nonce as Hex,
  };
  const token = { address: network.usdc.address, abi: tokenAbi } as const;
  // One round of concurrent reads; the simulation's verdict is used only if everything else passed.
  const simulation = clients.public
    .simulateContract({ ...token, functionName: "transferWithAuthorization", args: transferArgs(message, signature) as never, account: clients.relayer.account })
    .then(
      () => null,
      (err: { shortMessage?: string }) => err.shortMessage ?? "reverted",
    );
  const [block, signatureOk, used, balance, simulationError] = await Promise.all([
    clients.public.getBlock({ blockTag: "latest" }),
    clients.public.verifyTypedData({
      address: from,
      domain: { name: network.usdc.name, version: network.usdc.version, chainId: network.chainId, verifyingContract: network.usdc.address },
      types: AUTHORIZATION_TYPES,
      primaryType: "TransferWithAuthorization",
      message,
      signature,
    }),
    clients.public.readContract({ ...token, functionName: "authorizationState", args: [from, message.nonce] }) as Promise<boolean>,
    clients.public.readContract({ ...token, functionName: "balanceOf", args: [from] }) as Promise<bigint>,
    simulation,
  ]);
  if (!signatureOk) throw invalidPayment("the signature does not match the authorization, token or chain");
  const now = block.timestamp > BigInt(Math.floor(Date.now() / 1000)) ? block.timestamp : BigInt(Math.floor(Date.now() / 1000));
  if (message.validAfter >= block.timestamp) throw invalidPayment("the authorization is not valid yet");
  if (message.validBefore <= now + VALIDITY_MARGIN_S) throw invalidPayment("the authorization has expired");
  if (used) throw new ApiError("payment_already_used", "This payment authorization has already been used.");
  if (balance < message.value) throw invalidPayment("the payer's balance is too low");
  if (simulationError) throw invalidPayment(`the transfer would fail on chain (${simulationError})`);
}

/** Arguments of the (v, r, s) form for a 65-byte signature, of the (bytes) form otherwise. */
export function transferArgs(
  m: { from: Address; to: Address; value: bigint; validAfter: bigint; validBefore: bigint; nonce: Hex },
  signature: Hex,
): readonly unknown[] {
  const base = [m.from, m.to, m.value, m.validAfter, m.validBefore, m.nonce] as const;
  if (signature.length !== 132) return [...base, signature];
  const { r, s, v, yParity } = parseSignature(signature);
  return [...base, Number(v ?? BigInt(27 + (yParity ?? 0))), r, s];
}
