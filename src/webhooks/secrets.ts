import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

/**
 * Webhook signing secrets: `whsec_<base64 of 24 random bytes>` (the Standard Webhooks form),
 * shown to the owner once and stored encrypted (AES-256-GCM, key derived from SECRET_KEY), so
 * a copy of the database alone cannot forge deliveries.
 */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString("base64")}`;
}

const keyFrom = (secretKey: string) => createHash("sha256").update(`toolgate webhook secrets\0${secretKey}`).digest();

export function sealSecret(secretKey: string, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", keyFrom(secretKey), iv);
  const sealed = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return `v1.${iv.toString("base64")}.${cipher.getAuthTag().toString("base64")}.${sealed.toString("base64")}`;
}

export function openSecret(secretKey: string, sealed: string): string {
  const [version, iv, tag, data] = sealed.split(".");
  if (version !== "v1" || !iv || !tag || !data) throw new Error("unknown sealed secret format");
  const decipher = createDecipheriv("aes-256-gcm", keyFrom(secretKey), Buffer.from(iv, "base64"));
  decipher.setAuthTag(Buffer.from(tag, "base64"));
  return Buffer.concat([decipher.update(Buffer.from(data, "base64")), decipher.final()]).toString("utf8");
}
