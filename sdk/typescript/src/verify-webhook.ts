/**
 * Verifying a webhook delivery before trusting it, with Web Crypto only (Node 20+, browsers,
 * edge runtimes). Either signature the gateway sends is accepted: `X-Webhook-Signature`
 * (`sha256=<hex>` HMAC of the raw body keyed by the whole secret string) or the Standard Webhooks
 * `webhook-signature` (`v1,<base64>` HMAC of `id.timestamp.body` keyed by the secret's decoded
 * bytes; several during a secret rotation). Comparisons run inside `crypto.subtle.verify`, in
 * constant time. The Standard Webhooks signature is checked first, as in the Python library: the
 * timestamp checked for freshness is always a signed one, `webhook-timestamp` when that signature
 * matches (fresh on a resend), else the body's own `timestamp` under `X-Webhook-Signature`.
 */
import { ToolgateError } from "./errors.js";

export interface WebhookEvent {
  id: string;
  event: string;
  timestamp: string;
  data: Record<string, unknown>;
}

export interface VerifyWebhookOptions {
  /** How old (or how far in the future) a delivery may be. Default 300 s. */
  toleranceSeconds?: number;
  /** The time to judge freshness against (tests, replays). Default now. */
  now?: Date;
}

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

const encoder = new TextEncoder();
const header = (headers: HeaderBag, name: string): string | undefined => {
  if (typeof (headers as Headers).get === "function")
    return (headers as Headers).get(name) ?? undefined;
  const entry = Object.entries(headers).find(([k]) => k.toLowerCase() === name);
  const value = entry?.[1];
  return Array.isArray(value) ? value.join(" ") : value;
};
const fromHex = (hex: string): Uint8Array | null =>
  /^(?:[0-9a-f]{2})+$/i.test(hex)
    ? Uint8Array.from(hex.match(/../g)!, (b) => parseInt(b, 16))
    : null;
const fromBase64 = (b64: string): Uint8Array | null => {
  try {
    return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
};
const hmacKey = (secret: Uint8Array) =>
  crypto.subtle.importKey("raw", secret as BufferSource, { name: "HMAC", hash: "SHA-256" }, false, [
    "verify",
  ]);
const fail = (code: "webhook_signature_invalid" | "webhook_timestamp_invalid", message: string) =>
  new ToolgateError({ status: 0, code, message });

/** Verifies a delivery and returns its parsed event; throws ToolgateError otherwise. */
export async function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: HeaderBag,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<WebhookEvent> {
  const body = typeof rawBody === "string" ? encoder.encode(rawBody) : rawBody;
  const bodyText = typeof rawBody === "string" ? rawBody : new TextDecoder().decode(rawBody);
  let signedAt: number | undefined;
  let verified = false;

  // The Standard Webhooks signature first: it signs its own fresh timestamp, so a resent event
  // (whose body keeps the event's original time) is judged by when it was sent.
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  const keyBytes = fromBase64(secret.startsWith("whsec_") ? secret.slice(6) : secret);
  if (id && timestamp && signatures && keyBytes) {
    const key = await hmacKey(keyBytes);
    const content = encoder.encode(`${id}.${timestamp}.${bodyText}`);
    for (const entry of signatures.split(" ")) {
      const [version, sig] = entry.split(",");
      const sigBytes = version === "v1" && sig ? fromBase64(sig) : null;
      if (
        sigBytes &&
        (await crypto.subtle.verify("HMAC", key, sigBytes as BufferSource, content as BufferSource))
      ) {
        verified = true;
        signedAt = Number(timestamp) * 1000;
        break;
      }
    }
  }

  const simple = header(headers, "x-webhook-signature");
  const simpleBytes = simple?.startsWith("sha256=") ? fromHex(simple.slice(7)) : null;
  if (
    !verified &&
    simpleBytes &&
    (await crypto.subtle.verify(
      "HMAC",
      await hmacKey(encoder.encode(secret)),
      simpleBytes as BufferSource,
      body as BufferSource,
    ))
  )
    verified = true;
  if (!verified)
    throw fail(
      "webhook_signature_invalid",
      "The webhook's signature does not match the body and secret.",
    );

  let event: WebhookEvent;
  try {
    event = JSON.parse(bodyText) as WebhookEvent;
  } catch {
    throw fail("webhook_signature_invalid", "The webhook's body is not JSON.");
  }
  signedAt ??= Date.parse(event.timestamp);
  const tolerance = options.toleranceSeconds ?? 300;
  const age = ((options.now ?? new Date()).getTime() - signedAt) / 1000;
  if (!Number.isFinite(age))
    throw fail("webhook_timestamp_invalid", "The webhook's timestamp is not a date.");
  // Worded as the Python library's verify_webhook words it.
  if (Math.abs(age) > tolerance)
    throw fail(
      "webhook_timestamp_invalid",
      age >= 0
        ? `The webhook was signed ${Math.round(age)} s ago, beyond the ${tolerance} s tolerance (a replay or a clock far off).`
        : `The webhook was signed ${Math.round(-age)} s in the future, beyond the ${tolerance} s tolerance (a clock far off).`,
    );
  return event;
}
