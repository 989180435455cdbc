import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { call, startGateway, type TestGateway } from "../helpers/gateway.js";
import { signAuthorization, startChains, v1Header } from "../helpers/x402.js";

/**
 * A keyless paid call is counted by its wallet account's tier once its payment is verified, not
 * by the limit on requests without credentials: a payer whose address spent that limit (on the
 * catalogue, the 402 offers) is still served. A payment header that is junk is counted by the
 * address's refused payments (`x402-refused`), as before.
 */
const PRICE = 2000n;
const payer = privateKeyToAccount(generatePrivateKey());
let chains: Awaited<ReturnType<typeof startChains>>;
let gw: TestGateway;
beforeAll(async () => {
  chains = await startChains([payer.address]);
  gw = await startGateway({
    env: { ...chains.env, STATUS_CHECK_INTERVAL_MS: "600000", ENDPOINT_LIMITS: "anonymous=3/60" },
  });
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  await chains?.stop();
});

const from = (address: string) => ({ "x-forwarded-for": address });

describe("a keyless paid call", () => {
  it("is served from an address whose anonymous limit is spent; a junk payment from there is counted as a refused payment", async () => {
    const address = "198.51.100.140";
    for (let i = 0; i < 3; i++)
      expect((await call(`${gw.url}/v1/tools/hash`, { headers: from(address) })).status).toBe(200);
    const offer = await call(`${gw.url}/v1/tools/hash`, {
      body: { text: "paid" },
      headers: from(address),
    });
    expect([offer.status, offer.body.error?.code]).toEqual([429, "rate_limited"]);
    for (let i = 0; i < 2; i++) {
      const paid = await call(`${gw.url}/v1/tools/hash`, {
        body: { text: `paid ${i}` },
        headers: {
          ...from(address),
          "x-payment": v1Header(
            "base-sepolia",
            await signAuthorization({ account: payer, chain: chains.base, value: PRICE }),
          ),
        },
      });
      expect(paid.status).toBe(200);
      // Counted by the wallet account's tier (Free: 60 a minute), and shown.
      expect(paid.headers.get("ratelimit-policy")).toBe("60;w=60");
      expect(paid.headers.get("ratelimit-remaining")).toBe(String(59 - i));
    }
    const junk = await call(`${gw.url}/v1/tools/hash`, {
      body: { text: "junk" },
      headers: { ...from(address), "x-payment": "junk" },
    });
    // Refused, and counted by the limit on refused payments (x402-refused, 60 a minute), shown.
    expect([junk.status, junk.body.error?.code]).toEqual([402, "payment_invalid"]);
    expect(junk.headers.get("ratelimit-policy")).toBe("60;w=60");
    expect(junk.headers.get("ratelimit-remaining")).toBe("59");
  }, 60_000);
});
