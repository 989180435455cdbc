import { createHmac } from "node:crypto";

/**
 * `X-Webhook-Signature: sha256=<lowercase hex HMAC-SHA256 of the raw body, keyed by the secret>`
 * (the specification's form, always the current secret), and the Standard Webhooks
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<unix seconds>.<body>", keyed by the
 * secret's decoded bytes>` — one entry per valid secret while a rotation overlaps.
 */
export function specSignature(secret: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(body, "utf8").digest("hex")}`;
}

export function standardSignature(
  secret: string,
  id: string,
  unixSeconds: number,
  body: string,
): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  return `v1,${createHmac("sha256", key).update(`${id}.${unixSeconds}.${body}`, "utf8").digest("base64")}`;
}
