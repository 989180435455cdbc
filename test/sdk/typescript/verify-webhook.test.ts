import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Toolgate, ToolgateError, verifyWebhook } from "../../../sdk/typescript/src/index.js";
import { fundedAccount, startGateway, type TestGateway } from "../../helpers/gateway.js";
import { startReceiver, type Received } from "../../helpers/receiver.js";

/**
 * verifyWebhook against a real delivery: a gateway sends `webhook.test` to a real HTTPS
 * receiver, and the library judges the bytes and headers that arrived.
 */
let gw: TestGateway;
let rx: Awaited<ReturnType<typeof startReceiver>>;
let delivery: Received;
let secret: string;
let client: Toolgate;
let hookId: string;
beforeAll(async () => {
  rx = await startReceiver();
  gw = await startGateway({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "1" } });
  const { key } = await fundedAccount(gw.url, 100, "pro");
  client = new Toolgate({ apiKey: key, baseUrl: gw.url });
  const hook = await client.webhooks.register({ url: rx.url("/sdk-ts"), events: ["tool.error"] });
  secret = hook.secret;
  hookId = hook.id;
  await client.webhooks.test({ webhook_id: hook.id });
  const [first] = await rx.waitFor("/sdk-ts", 1);
  if (!first) throw new Error("no delivery arrived");
  delivery = first;
});
afterAll(async () => {
  await gw?.stop();
  await rx?.stop();
});

const refusal = async (promise: Promise<unknown>) => {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ToolgateError);
  return (error as ToolgateError).code;
};
const onlyHeaders = (names: string[]) =>
  Object.fromEntries(Object.entries(delivery.headers).filter(([k]) => names.includes(k))) as Record<
    string,
    string
  >;

describe("verifyWebhook", () => {
  it("accepts a real delivery and returns its event", async () => {
    const event = await verifyWebhook(
      delivery.raw,
      delivery.headers as Record<string, string>,
      secret,
    );
    expect(event).toMatchObject({ id: delivery.headers["x-webhook-id"], event: "webhook.test" });
  });

  it("accepts either signature alone: X-Webhook-Signature, or the Standard Webhooks headers", async () => {
    await expect(
      verifyWebhook(delivery.raw, onlyHeaders(["x-webhook-signature"]), secret),
    ).resolves.toMatchObject({ event: "webhook.test" });
    await expect(
      verifyWebhook(
        delivery.raw,
        new Headers(onlyHeaders(["webhook-id", "webhook-timestamp", "webhook-signature"])),
        secret,
      ),
    ).resolves.toMatchObject({ event: "webhook.test" });
  });

  it("refuses a tampered body", async () => {
    const tampered = delivery.raw.replace('"webhook.test"', '"payment.received"');
    expect(tampered).not.toBe(delivery.raw);
    expect(
      await refusal(verifyWebhook(tampered, delivery.headers as Record<string, string>, secret)),
    ).toBe("webhook_signature_invalid");
  });

  it("refuses the wrong secret", async () => {
    expect(
      await refusal(
        verifyWebhook(
          delivery.raw,
          delivery.headers as Record<string, string>,
          `whsec_${btoa("another secret of 32 bytes......")}`,
        ),
      ),
    ).toBe("webhook_signature_invalid");
  });

  it("refuses a stale delivery, each signature's timestamp judged", async () => {
    const later = new Date(Date.now() + 10 * 60_000);
    expect(
      await refusal(
        verifyWebhook(delivery.raw, delivery.headers as Record<string, string>, secret, {
          now: later,
        }),
      ),
    ).toBe("webhook_timestamp_invalid");
    expect(
      await refusal(
        verifyWebhook(delivery.raw, onlyHeaders(["x-webhook-signature"]), secret, { now: later }),
      ),
    ).toBe("webhook_timestamp_invalid");
    await expect(
      verifyWebhook(delivery.raw, delivery.headers as Record<string, string>, secret, {
        now: later,
        toleranceSeconds: 3600,
      }),
    ).resolves.toBeTruthy();
  });

  it("says how long ago, or how far in the future, a refused delivery was signed (as Python does)", async () => {
    const signedAt = Number(delivery.headers["webhook-timestamp"]) * 1000;
    const message = (now: number) =>
      verifyWebhook(delivery.raw, delivery.headers as Record<string, string>, secret, {
        now: new Date(now),
      }).then(
        () => null,
        (e: ToolgateError) => [e.code, e.message],
      );
    expect(await message(signedAt + 3_604_000)).toEqual([
      "webhook_timestamp_invalid",
      "The webhook was signed 3604 s ago, beyond the 300 s tolerance (a replay or a clock far off).",
    ]);
    expect(await message(signedAt - 3_596_000)).toEqual([
      "webhook_timestamp_invalid",
      "The webhook was signed 3596 s in the future, beyond the 300 s tolerance (a clock far off).",
    ]);
  });

  it("accepts a resent event older than the tolerance by its fresh webhook-timestamp, and refuses it tampered", async () => {
    // A resend keeps the event's body (and its original timestamp); only webhook-timestamp is new.
    const sentAt = Date.parse(JSON.parse(delivery.raw).timestamp);
    await new Promise((r) => setTimeout(r, Math.max(0, sentAt + 5_000 - Date.now())));
    await client.webhooks.resend(hookId, delivery.headers["x-webhook-id"] as string);
    const resent = (await rx.waitFor("/sdk-ts", 2))[1]!;
    expect(resent.raw).toBe(delivery.raw);
    const headers = resent.headers as Record<string, string>;
    const options = { toleranceSeconds: 3 };
    await expect(verifyWebhook(resent.raw, headers, secret, options)).resolves.toMatchObject({
      event: "webhook.test",
    });
    const tampered = resent.raw.replace('"webhook.test"', '"payment.received"');
    expect(await refusal(verifyWebhook(tampered, headers, secret, options))).toBe(
      "webhook_signature_invalid",
    );
    // Without the Standard Webhooks headers only the body's own (old) timestamp is signed.
    const specOnly = { "x-webhook-signature": headers["x-webhook-signature"]! };
    expect(await refusal(verifyWebhook(resent.raw, specOnly, secret, options))).toBe(
      "webhook_timestamp_invalid",
    );
  });

  it("refuses a delivery with no signature at all", async () => {
    expect(await refusal(verifyWebhook(delivery.raw, {}, secret))).toBe(
      "webhook_signature_invalid",
    );
  });
});
