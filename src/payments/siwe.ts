import type { Address, Hex } from "viem";
import { ApiError } from "../http/errors.js";
import { randomId } from "../lib/ids.js";
import type { Services } from "../services.js";

/**
 * EIP-4361 (Sign-In with Ethereum) challenges, for both ways a wallet signs in: claiming an API
 * key for its account (`/api/v1/wallet/*`) and opening a dashboard session
 * (`/dashboard/sign-in/wallet/*`). The gateway writes the message itself with viem's
 * `createSiweMessage` and reads the signed one back with `parseSiweMessage` /
 * `validateSiweMessage`: no hand-written parsing. What is checked on the way back:
 * - the domain is this gateway's host and the URI its origin (a message for another site is no use here);
 * - the statement is the purpose's own (a key-claim challenge does not open a dashboard session);
 * - it carries an expiry, which has not passed, and its chain id is one the purpose accepts;
 * - the signature is the address's: recovered locally for an ordinary key (EOA); only a signature
 *   that does not recover to it is put to the chain (ERC-1271 / ERC-6492 smart wallets);
 * - its nonce was issued to this address for this purpose, and is spent by this use (single use,
 *   kept in the store with a short TTL). It is spent last, so a bad signature burns nothing.
 */
export interface SiwePurpose {
  /** The nonce's namespace in the store. */
  name: string;
  statement: string;
  /** Chain ids a message may name; null: any. */
  chainIds: number[] | null;
}

export const CHALLENGE_TTL_MS = 5 * 60_000;

const nonceName = (purpose: SiwePurpose, address: string, nonce: string) =>
  `siwe:${purpose.name}:${address.toLowerCase()}:${nonce}`;

/** viem, loaded by the first sign-in rather than at start-up (it is a large share of the gateway's start-up time). */
const loadViem = () => Promise.all([import("viem"), import("viem/siwe")]);

function originOf(uri: string): string | null {
  try {
    return new URL(uri).origin;
  } catch {
    return null;
  }
}

/**
 * How `text` compares with what `write` writes from the fields read out of it: the same; the same
 * lines with some fields' values written another way (`fields`: their labels, such as times
 * without milliseconds, as the `siwe` package writes them); or other text (lines added, removed or
 * changed outside a field's value, or fields `write` cannot write: it throws).
 */
function sameText(
  write: () => string,
  text: string,
): { same: true } | { same: false; reformatted: string[] | null } {
  let written: string;
  try {
    written = write();
  } catch {
    return { same: false, reformatted: null };
  }
  if (written === text) return { same: true };
  const ours = written.split("\n");
  const theirs = text.split("\n");
  if (ours.length !== theirs.length) return { same: false, reformatted: null };
  const reformatted: string[] = [];
  for (const [i, line] of ours.entries()) {
    if (line === theirs[i]) continue;
    const label = /^([A-Z][A-Za-z ]*): /.exec(line)?.[1];
    if (!label || !theirs[i]!.startsWith(`${label}: `)) return { same: false, reformatted: null };
    reformatted.push(label);
  }
  return { same: false, reformatted };
}

/** 422 naming `chain_id` unless the purpose accepts the chain. */
export function requireChain(purpose: SiwePurpose, chainId: number, param = "chain_id"): void {
  if (purpose.chainIds && !purpose.chainIds.includes(chainId))
    throw new ApiError(
      "validation_failed",
      `Chain id ${chainId} is not one of this gateway's networks (${purpose.chainIds.join(", ")}): switch the wallet to one of them.`,
      { param },
    );
}

/** A fresh challenge for `address` on `chainId`: the message to sign and when it expires. */
export async function issueSiweChallenge(
  services: Services,
  purpose: SiwePurpose,
  address: string,
  chainId: number,
): Promise<{ message: string; expiresAt: Date }> {
  requireChain(purpose, chainId);
  const [{ getAddress }, { createSiweMessage }] = await loadViem();
  const base = new URL(services.config.publicBaseUrl);
  // From the CSPRNG: viem's generateSiweNonce slides a window along one Math.random buffer, so
  // each nonce it gives is the previous one shifted by a character (EIP-4361 asks for randomness).
  const nonce = randomId(32);
  const issuedAt = new Date();
  const expiresAt = new Date(issuedAt.getTime() + CHALLENGE_TTL_MS);
  const message = createSiweMessage({
    domain: base.host,
    uri: base.origin,
    address: getAddress(address),
    statement: purpose.statement,
    version: "1",
    chainId,
    nonce,
    issuedAt,
    expirationTime: expiresAt,
  });
  await services.store.saveNonce(nonceName(purpose, address, nonce), CHALLENGE_TTL_MS);
  return { message, expiresAt };
}

/** The address that signed `text`, a challenge issued for `purpose`; 400 `invalid_token` (or 422 for the chain) otherwise. */
export async function verifySiweChallenge(
  services: Services,
  purpose: SiwePurpose,
  text: string,
  signature: Hex,
): Promise<Address> {
  const refused = (why: string, param = "message") =>
    new ApiError("invalid_token", `The signed sign-in message is not valid: ${why}.`, { param });
  const [
    { getAddress, verifyMessage },
    { createSiweMessage, parseSiweMessage, validateSiweMessage },
  ] = await loadViem();
  const message = parseSiweMessage(text);
  const base = new URL(services.config.publicBaseUrl);
  if (!message.address || !message.nonce || !message.chainId || message.version !== "1")
    throw refused("it is not an EIP-4361 message");
  // The parser skips text before, between and after the fields it knows. A message with lines
  // added is no longer EIP-4361 to a wallet, which then shows it without its "this request is
  // for another site" warning, and under a first line naming this gateway: the signed text must
  // be the one its own fields write. The same fields written another way (a library rebuilding
  // the message writes times without milliseconds) are refused too, as not the challenge issued.
  const compared = sameText(
    () => createSiweMessage(message as Parameters<typeof createSiweMessage>[0]),
    text,
  );
  if (!compared.same && compared.reformatted)
    throw refused(
      `it is not the challenge exactly as issued (${compared.reformatted.join(", ")} written differently); sign the message as given, unchanged`,
    );
  if (!compared.same) throw refused("it has text outside EIP-4361's fields");
  if (message.scheme !== undefined && `${message.scheme}:` !== base.protocol)
    throw refused(`its scheme is not ${base.protocol.slice(0, -1)}`);
  if (message.domain !== base.host)
    throw refused(`it is for ${message.domain ?? "no domain"}, not ${base.host}`);
  if (!message.uri || originOf(message.uri) !== base.origin)
    throw refused(`its uri is not ${base.origin}`);
  if (message.statement !== purpose.statement) throw refused("it is not this gateway's challenge");
  if (!message.expirationTime) throw refused("it has no expiration time");
  if (!validateSiweMessage({ message, domain: base.host }))
    throw refused("it has expired or is not valid yet");
  requireChain(purpose, message.chainId, "message");
  const address = getAddress(message.address) as Address;

  // An ordinary key's signature is recovered here; only another kind goes to the chain.
  let valid = await verifyMessage({ address, message: text, signature }).catch(() => false);
  const onChain = services.payments?.clients.get(`eip155:${message.chainId}`);
  if (!valid && onChain) {
    try {
      valid = await onChain.public.verifySiweMessage({ message: text, signature, address });
    } catch {
      throw new ApiError(
        "chain_unavailable",
        "The chain could not be asked to check this smart-wallet signature; retry shortly.",
        { headers: { "Retry-After": "2" } },
      );
    }
  }
  if (!valid) throw refused("the signature is not the wallet's", "signature");
  // Single use, checked last so a bad signature cannot burn someone's challenge. The challenge was
  // issued for one address: another wallet cannot use its nonce.
  if (!(await services.store.consumeNonce(nonceName(purpose, address, message.nonce))))
    throw refused(
      "this challenge was not issued to this address, was already used, or has expired",
    );
  return address;
}
