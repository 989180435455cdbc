/**
 * Verifying a webhook delivery before trusting it, with Web Crypto only (Node 20+, browsers,
 * edge runtimes). Either signature the gateway sends is accepted: `X-Webhook-Signature`
 * (`sha256=<hex>` HMAC of the raw body keyed by the whole secret string) or the Standard Webhooks
 * `webhook-signature` (`v1,<base64>` HMAC of `id.timestamp.body` keyed by the secret's decoded
 * bytes; several during a secret rotation). Comparisons run inside `crypto.subtle.verify`, in
 * constant time. The Standard Webhooks signature is checked first, as in the Python library: the
 * timestamp checked for freshness is always a signed one, `webhook-timestamp` when that signature
 * matches (fresh on a resend), else the body's own `timestamp` under `X-Webhook-Signature`.
 * The same rules as Python's verify_webhook: header values and the secret are read without
 * surrounding whitespace; an empty secret is refused (`invalid_argument`: anybody can sign with
 * it); a signature is read only as the gateway writes it (padded base64, or hex); a signed
 * `webhook-timestamp` that is not decimal Unix seconds, or a body `timestamp` that is not a
 * string, is `webhook_timestamp_invalid`; a signed body that is not an event object is
 * `webhook_signature_invalid`.
 */
import { invalid, trimHeaderValue } from "./checks.js";
import { ToolgateError } from "./errors.js";

export interface WebhookEvent {
  id: string;
  event: string;
  timestamp: string;
  data: Record<string, unknown>;
}

export interface VerifyWebhookOptions {
  /** How old (or how far in the future) a delivery may be. Default 300 s. */
  toleranceSeconds?: number | undefined;
  /** The time to judge freshness against (tests, replays). Default now. */
  now?: Date | undefined;
}

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

const encoder = new TextEncoder();
/** A header's value, surrounding whitespace removed (HTTP drops it; a plain object may keep it). */
const header = (headers: HeaderBag, name: string): string | undefined => {
  let value: string | string[] | null | undefined;
  if (typeof (headers as Headers).get === "function") value = (headers as Headers).get(name);
  else value = Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];
  if (Array.isArray(value)) value = value.join(" ");
  return typeof value === "string" ? trimHeaderValue(value) : undefined;
};
const fromHex = (hex: string): Uint8Array | null =>
  /^(?:[0-9a-f]{2})+$/i.test(hex)
    ? Uint8Array.from(hex.match(/../g)!, (b) => parseInt(b, 16))
    : null;
/**
 * Standard base64, padded, and nothing else (no whitespace, no URL-safe alphabet): the form the
 * gateway writes, and the only one Python's verify_webhook reads (atob alone would also take
 * unpadded text and spaces).
 */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const fromBase64 = (b64: string): Uint8Array | null =>
  BASE64.test(b64) ? Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)) : null;
/** A signature as the gateway writes it: canonical padded base64, so both libraries read the same strings. */
const signatureBytes = (b64: string): Uint8Array | null => {
  const bytes = fromBase64(b64);
  return bytes && btoa(String.fromCharCode(...bytes)) === b64 ? bytes : null;
};
const hmacKey = (secret: Uint8Array) =>
  crypto.subtle.importKey("raw", secret as BufferSource, { name: "HMAC", hash: "SHA-256" }, false, [
    "verify",
  ]);
const fail = (code: "webhook_signature_invalid" | "webhook_timestamp_invalid", message: string) =>
  new ToolgateError({ status: 0, code, message });
/** Unix seconds as Standard Webhooks writes them: decimal digits only (no sign, point, hex). */
const UNIX_SECONDS = /^[0-9]+$/;
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * The secret as used: surrounding whitespace removed (as an API key's: one read from a file or an
 * environment file ends with a newline; a gateway secret never holds whitespace). An empty one,
 * or `whsec_` with nothing after it, is refused: an HMAC keyed by nothing is one anybody can
 * compute, so every forged delivery would verify.
 */
function usableSecret(secret: unknown): string {
  if (typeof secret !== "string")
    throw invalid(
      "secret must be a string: the webhook's whsec_… secret, from registration or rotation.",
      "secret",
    );
  const trimmed = trimHeaderValue(secret);
  if (trimmed === "" || trimmed === "whsec_")
    throw invalid(
      `secret is ${trimmed === "" ? "empty" : '"whsec_" with nothing after it'}: a signature keyed by an empty secret is one anybody can make, so no delivery can be verified with it. Pass the webhook's whsec_… secret, from registration or rotation (is the variable it is read from set?).`,
      "secret",
    );
  return trimmed;
}

/** Verifies a delivery and returns its parsed event; throws ToolgateError otherwise. */
export async function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: HeaderBag,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<WebhookEvent> {
  secret = usableSecret(secret);
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
  if (id !== undefined && timestamp !== undefined && signatures && keyBytes?.length) {
    const key = await hmacKey(keyBytes);
    const content = encoder.encode(`${id}.${timestamp}.${bodyText}`);
    for (const entry of signatures.split(" ")) {
      const [version, sig] = entry.split(",");
      const sigBytes = version === "v1" && sig ? signatureBytes(sig) : null;
      if (
        sigBytes &&
        (await crypto.subtle.verify("HMAC", key, sigBytes as BufferSource, content as BufferSource))
      ) {
        verified = true;
        // Signed, yet not a time: refused as one, never read as something else (Number() reads
        // "0x6b0c31b7" as hex, "" as 0).
        if (!UNIX_SECONDS.test(timestamp))
          throw fail(
            "webhook_timestamp_invalid",
            "The webhook's webhook-timestamp is not a time in Unix seconds.",
          );
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

  let event: unknown;
  try {
    event = JSON.parse(bodyText);
  } catch {
    throw fail("webhook_signature_invalid", "The webhook's body is not a Toolgate event.");
  }
  // Signed, but not an event (as Python refuses it): handing it back typed as one would let a
  // handler read `event.data.x` off something else.
  if (
    !isObject(event) ||
    typeof event.id !== "string" ||
    typeof event.event !== "string" ||
    !("timestamp" in event) ||
    !isObject(event.data)
  )
    throw fail("webhook_signature_invalid", "The webhook's body is not a Toolgate event.");
  if (typeof event.timestamp !== "string")
    throw fail("webhook_timestamp_invalid", "The webhook's timestamp is not a date.");
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
  return event as unknown as WebhookEvent;
}
