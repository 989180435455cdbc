import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import type { WebhookRecord } from "../store/types.js";

/**
 * Webhook signing secrets: `whsec_<base64 of 24 random bytes>` (the Standard Webhooks form),
 * shown to the owner once and stored encrypted (AES-256-GCM, key derived from SECRET_KEY), so
 * a copy of the database alone cannot forge deliveries.
 *
 * SECRET_KEY is a keyring: the first key seals, and opening tries every key, so the key can be
 * rotated (new key first, old key kept after it) without losing the secrets sealed before.
 */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString("base64")}`;
}

/** Whether a rotation's previous secret still signs (beside the current one) at `now`. */
export const previousSecretSigns = (
  w: Pick<WebhookRecord, "previousSealedSecret" | "previousSecretExpiresAt">,
  now = Date.now(),
): boolean => w.previousSealedSecret !== null && (w.previousSecretExpiresAt ?? 0) > now;

const keyFrom = (secretKey: string) =>
  createHash("sha256").update(`toolgate webhook secrets\0${secretKey}`).digest();

export function sealSecret(secretKeys: readonly string[], plaintext: string): string {
  const secretKey = secretKeys[0];
  if (!secretKey) throw new Error("no secret key to seal with");
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", keyFrom(secretKey), iv);
  const sealed = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return `v1.${iv.toString("base64")}.${cipher.getAuthTag().toString("base64")}.${sealed.toString("base64")}`;
}

/** A sealed secret that none of the configured keys opens: a fault of this deployment, never of the receiver. */
export class SecretUnreadableError extends Error {}

export function openSecret(secretKeys: readonly string[], sealed: string): string {
  const [version, iv, tag, data] = sealed.split(".");
  if (version !== "v1" || !iv || !tag || !data)
    throw new SecretUnreadableError("unknown sealed secret format");
  for (const secretKey of secretKeys) {
    const decipher = createDecipheriv("aes-256-gcm", keyFrom(secretKey), Buffer.from(iv, "base64"));
    decipher.setAuthTag(Buffer.from(tag, "base64"));
    try {
      return Buffer.concat([
        decipher.update(Buffer.from(data, "base64")),
        decipher.final(),
      ]).toString("utf8");
    } catch {
      // sealed with another key of the ring (or none): try the next
    }
  }
  throw new SecretUnreadableError(
    `the webhook secret was sealed with a key that is not in SECRET_KEY (${secretKeys.length} key(s) tried)`,
  );
}
