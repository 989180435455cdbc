import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ToolgateError, verifyWebhook } from "../../../sdk/typescript/src/index.js";
import { specSignature, standardSignature } from "../../../src/webhooks/signing.js";

/**
 * verifyWebhook's rules on deliveries signed here with the gateway's own signing functions
 * (src/webhooks/signing.ts), the same rules sdk/python/tests/test_webhooks.py holds Python's
 * verify_webhook to: an empty secret is refused, a signed timestamp that is not Unix seconds is
 * refused as a timestamp, header values are read trimmed, signatures only as canonical padded
 * base64, and a signed body that is not an event is refused.
 */
const SECRET = `whsec_${Buffer.from("twenty-four random bytes").toString("base64")}`;
const NOW = 1_795_961_271;
const event = {
  id: "evt_1",
  event: "webhook.test",
  timestamp: new Date(NOW * 1000).toISOString(),
  data: {},
};
const BODY = JSON.stringify(event);
const options = { now: new Date(NOW * 1000) };

const standard = (body: string, secret = SECRET, stamp: string | number = NOW) => ({
  "webhook-id": "evt_1",
  "webhook-timestamp": String(stamp),
  "webhook-signature": standardSignature(secret, "evt_1", stamp as number, body),
});
const outcome = (promise: Promise<unknown>) =>
  promise.then(
    (e) => `ok ${(e as { id: string }).id}`,
    (e: unknown) =>
      e instanceof ToolgateError
        ? `${e.code}${e.param ? ` (${e.param})` : ""}`
        : `raw ${String(e)}`,
  );

describe("verifyWebhook's rules (as Python's verify_webhook)", () => {
  it("refuses an empty secret, or whsec_ with nothing after it, as invalid_argument: anybody can sign with it", async () => {
    // Deliveries forged by anyone: an HMAC keyed by nothing needs no secret to make.
    const spec = {
      "x-webhook-signature": `sha256=${createHmac("sha256", "").update(BODY).digest("hex")}`,
    };
    const std = {
      "webhook-id": "evt_1",
      "webhook-timestamp": String(NOW),
      "webhook-signature": `v1,${createHmac("sha256", Buffer.alloc(0)).update(`evt_1.${NOW}.${BODY}`).digest("base64")}`,
    };
    for (const secret of ["", "whsec_", " \n"]) {
      expect(await outcome(verifyWebhook(BODY, spec, secret, options))).toBe(
        "invalid_argument (secret)",
      );
      expect(await outcome(verifyWebhook(BODY, std, secret, options))).toBe(
        "invalid_argument (secret)",
      );
    }
    const error = await verifyWebhook(BODY, std, "whsec_", options).catch((e: ToolgateError) => e);
    expect((error as ToolgateError).message).toMatch(/^secret is "whsec_" with nothing after it/);
  });

  it("refuses a signed webhook-timestamp that is not decimal Unix seconds as webhook_timestamp_invalid", async () => {
    for (const stamp of ["abc", "0x6b0c31b7", "1795961271.0", "+1795961271", "1e9", ""])
      expect(
        await outcome(verifyWebhook(BODY, standard(BODY, SECRET, stamp), SECRET, options)),
        stamp,
      ).toBe("webhook_timestamp_invalid");
    expect(await outcome(verifyWebhook(BODY, standard(BODY), SECRET, options))).toBe("ok evt_1");
  });

  it("refuses a body timestamp that is not a string, under X-Webhook-Signature alone, as webhook_timestamp_invalid", async () => {
    const body = JSON.stringify({ ...event, timestamp: NOW * 1000 });
    const headers = { "x-webhook-signature": specSignature(SECRET, body) };
    expect(await outcome(verifyWebhook(body, headers, SECRET, options))).toBe(
      "webhook_timestamp_invalid",
    );
  });

  it("reads header values without surrounding whitespace, as HTTP does, from a plain object too", async () => {
    const headers = { "X-Webhook-Signature": ` ${specSignature(SECRET, BODY)} ` };
    expect(await outcome(verifyWebhook(BODY, headers, SECRET, options))).toBe("ok evt_1");
    const std = Object.fromEntries(Object.entries(standard(BODY)).map(([k, v]) => [k, `${v}\t`]));
    expect(await outcome(verifyWebhook(BODY, std, SECRET, options))).toBe("ok evt_1");
  });

  it("uses a secret with a trailing newline (read from a file) as the secret", async () => {
    expect(await outcome(verifyWebhook(BODY, standard(BODY), `${SECRET}\n`, options))).toBe(
      "ok evt_1",
    );
    const spec = { "x-webhook-signature": specSignature(SECRET, BODY) };
    expect(await outcome(verifyWebhook(BODY, spec, `${SECRET}\n`, options))).toBe("ok evt_1");
  });

  it("takes a Standard Webhooks signature only as the gateway writes it: padded base64", async () => {
    const headers = standard(BODY);
    const unpadded = {
      ...headers,
      "webhook-signature": headers["webhook-signature"].replace(/=+$/, ""),
    };
    expect(await outcome(verifyWebhook(BODY, unpadded, SECRET, options))).toBe(
      "webhook_signature_invalid",
    );
  });

  it("refuses a signed body that is not an event as webhook_signature_invalid, not handing it back", async () => {
    for (const body of ['{"hello":1}', "[1]", "null", JSON.stringify({ ...event, data: [] })]) {
      const headers = { ...standard(body), "x-webhook-signature": specSignature(SECRET, body) };
      expect(await outcome(verifyWebhook(body, headers, SECRET, options)), body).toBe(
        "webhook_signature_invalid",
      );
    }
  });
});
