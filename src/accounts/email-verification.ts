import { createHmac, timingSafeEqual } from "node:crypto";
import { reclaimLink } from "../dashboard/reclaim.js";
import type { Services } from "../services.js";

/**
 * Verification links carry a signed token `<account>.<expires>.<hmac>`: nothing to store,
 * and "once" is enforced by the account's verified flag, atomically with the 75-credit grant.
 * Signed with the first key of SECRET_KEY; any key of the ring verifies, so a link survives a
 * key rotation and is accepted by every process of the deployment.
 */
const LIFETIME_SECONDS = 7 * 24 * 3600;

function sign(secret: string, payload: string): string {
  return createHmac("sha256", secret).update(`email-verification:${payload}`).digest("base64url");
}

export function verificationToken(secret: string, accountId: string, nowMs = Date.now()): string {
  const payload = `${accountId}.${Math.floor(nowMs / 1000) + LIFETIME_SECONDS}`;
  return `${payload}.${sign(secret, payload)}`;
}

/** The account id a token vouches for, or null when it is forged, malformed or expired. */
export function readVerificationToken(
  secrets: readonly string[],
  token: string,
  nowMs = Date.now(),
): string | null {
  const parts = token.split(".");
  if (parts.length !== 3) return null;
  const [accountId, expires, signature] = parts as [string, string, string];
  const given = Buffer.from(signature);
  const signedBy = (secret: string) => {
    const expected = Buffer.from(sign(secret, `${accountId}.${expires}`));
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
  if (!secrets.some(signedBy)) return null;
  if (!/^\d+$/.test(expires) || Number(expires) * 1000 < nowMs) return null;
  return accountId;
}

export async function sendVerificationEmail(
  services: Services,
  accountId: string,
  email: string,
): Promise<void> {
  const link = `${services.config.publicBaseUrl}/api/v1/verify-email?token=${encodeURIComponent(verificationToken(services.config.secretKeys[0]!, accountId))}`;
  // Sign-up gives a key before the address is proven: whoever did not sign up is told how to
  // take the account back from whoever did (dashboard/reclaim.ts).
  const reclaim = await reclaimLink(services, accountId);
  await services.mailer.send({
    to: email,
    subject: "Verify your e-mail address for Toolgate",
    text: `Welcome to Toolgate.\n\nOpen this link to verify your e-mail address and receive 75 more free credits:\n\n${link}\n\nThe link is valid for 7 days.\n\nDid not sign up? Someone else gave your address, and holds a key to an account in your name. This link stops their keys and gives the account to you (it works once, within 7 days):\n\n${reclaim}\n`,
  });
}
