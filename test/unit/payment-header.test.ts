import { describe, expect, it } from "vitest";
import { encodeHeader, paymentIdentifier, readPaymentHeader } from "../../src/payments/wire.js";

/** Reading the x402 payment a request carries, both generations, before anything touches the chain. */
const FROM = "0xAbCdEf0123456789aBcDeF0123456789AbCdEf01";
const TO = "0x1111111111111111111111111111111111111111";
const ASSET = "0x2222222222222222222222222222222222222222";
const NONCE = `0x${"Ab".repeat(32)}`;
const SIGNATURE = `0x${"11".repeat(32)}${"22".repeat(32)}1B`;
const authorization = {
  from: FROM,
  to: TO,
  value: "2000",
  validAfter: "0",
  validBefore: "1900000000",
  nonce: NONCE,
};
const accepted = {
  scheme: "exact",
  network: "eip155:8453",
  asset: ASSET,
  amount: "2000",
  payTo: TO,
  maxTimeoutSeconds: 60,
  extra: { name: "USD Coin", version: "2" },
};
const v2 = (patch: Record<string, unknown> = {}) => ({
  x402Version: 2,
  accepted,
  payload: { signature: SIGNATURE, authorization },
  ...patch,
});
const headers = (map: Record<string, string>) => (name: string) => map[name];

describe("readPaymentHeader", () => {
  it("is null when the request carries no payment", () => {
    expect(readPaymentHeader(headers({}))).toBeNull();
  });

  it("reads a v2 PAYMENT-SIGNATURE, with every hex value in one spelling (lower case)", () => {
    const payment = readPaymentHeader(headers({ "payment-signature": encodeHeader(v2()) }))!;
    expect(payment.version).toBe(2);
    expect(payment.authorization.from).toBe(FROM.toLowerCase());
    expect(payment.authorization.nonce).toBe(NONCE.toLowerCase());
    expect(payment.signature).toBe(SIGNATURE.toLowerCase());
    expect(payment.version === 2 && payment.accepted.asset).toBe(ASSET);
  });

  it("reads a v1 X-PAYMENT", () => {
    const v1 = {
      x402Version: 1,
      scheme: "exact",
      network: "base",
      payload: { signature: SIGNATURE, authorization },
    };
    const payment = readPaymentHeader(headers({ "x-payment": encodeHeader(v1) }))!;
    expect(payment).toMatchObject({ version: 1, scheme: "exact", network: "base" });
  });

  it("says which header is not base64 of JSON", () => {
    expect(() => readPaymentHeader(headers({ "payment-signature": "not base64 json!" }))).toThrow(
      /PAYMENT-SIGNATURE is not base64 of JSON/,
    );
    expect(() =>
      readPaymentHeader(headers({ "x-payment": Buffer.from("{").toString("base64") })),
    ).toThrow(/X-PAYMENT is not base64 of JSON/);
  });

  it.each([
    [
      "a value above 2^256",
      {
        payload: {
          signature: SIGNATURE,
          authorization: { ...authorization, value: (2n ** 256n).toString() },
        },
      },
      /payload\.authorization\.value/,
    ],
    [
      "a negative value",
      { payload: { signature: SIGNATURE, authorization: { ...authorization, value: "-1" } } },
      /payload\.authorization\.value/,
    ],
    [
      "a short address",
      { payload: { signature: SIGNATURE, authorization: { ...authorization, to: "0x1234" } } },
      /payload\.authorization\.to/,
    ],
    [
      "a signature with s = 0",
      { payload: { signature: `0x${"11".repeat(32)}${"00".repeat(32)}1b`, authorization } },
      /payload\.signature/,
    ],
    [
      "a signature with v = 29",
      { payload: { signature: `0x${"11".repeat(32)}${"22".repeat(32)}1d`, authorization } },
      /payload\.signature/,
    ],
    [
      "odd-length signature hex",
      { payload: { signature: "0x123", authorization } },
      /payload\.signature/,
    ],
  ])("refuses %s, naming the field", (_what, patch, message) => {
    expect(() =>
      readPaymentHeader(headers({ "payment-signature": encodeHeader(v2(patch)) })),
    ).toThrow(message);
  });

  it("accepts a smart wallet's longer signature as bytes, for the wallet to judge", () => {
    const long = `0x${"ab".repeat(100)}`;
    expect(
      readPaymentHeader(
        headers({
          "payment-signature": encodeHeader(v2({ payload: { signature: long, authorization } })),
        }),
      )!.signature,
    ).toBe(long);
  });
});

describe("paymentIdentifier", () => {
  const withId = (info: unknown) =>
    readPaymentHeader(
      headers({
        "payment-signature": encodeHeader(v2({ extensions: { "payment-identifier": { info } } })),
      }),
    )!;

  it("is the client's id when the v2 payment carries the extension, else null", () => {
    expect(paymentIdentifier(withId({ id: "pay_0123456789abcdef" }))).toBe("pay_0123456789abcdef");
    expect(
      paymentIdentifier(readPaymentHeader(headers({ "payment-signature": encodeHeader(v2()) }))!),
    ).toBeNull();
  });

  it("is null for an extension sent as null (or another falsy value), as in the x402 reference", () => {
    for (const none of [null, false, 0, ""])
      expect(
        paymentIdentifier(
          readPaymentHeader(
            headers({
              "payment-signature": encodeHeader(v2({ extensions: { "payment-identifier": none } })),
            }),
          )!,
        ),
      ).toBeNull();
    // And the extensions themselves sent as null: none at all.
    expect(
      paymentIdentifier(
        readPaymentHeader(
          headers({ "payment-signature": encodeHeader(v2({ extensions: null })) }),
        )!,
      ),
    ).toBeNull();
    // Present but malformed is still refused, as the reference's validation does.
    expect(() =>
      paymentIdentifier(
        readPaymentHeader(
          headers({
            "payment-signature": encodeHeader(v2({ extensions: { "payment-identifier": {} } })),
          }),
        )!,
      ),
    ).toThrow();
  });

  it("refuses an id that is too short or has characters outside [A-Za-z0-9_-]", () => {
    expect(() => paymentIdentifier(withId({ id: "short" }))).toThrow();
    expect(() => paymentIdentifier(withId({ id: "pay 0123456789abcdef" }))).toThrow();
  });
});
