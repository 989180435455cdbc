/**
 * The same app with x402 v2: the official `@x402/express` middleware, Toolgate as the
 * facilitator through `HTTPFacilitatorClient`, the key sent as a bearer token.
 *
 *   TOOLGATE_URL=http://localhost:8402 TOOLGATE_API_KEY=tg_live_… PAY_TO=0x… \
 *   ASSET=0x… NETWORK=eip155:84532 npx tsx examples/facilitator/app-v2.ts
 */
import { HTTPFacilitatorClient, x402ResourceServer } from "@x402/core/server";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { paymentMiddleware } from "@x402/express";
import express from "express";

const toolgate = process.env.TOOLGATE_URL ?? "http://localhost:8402";
const key = process.env.TOOLGATE_API_KEY ?? "";
const payTo = process.env.PAY_TO ?? "";
const asset = process.env.ASSET ?? "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const network = (process.env.NETWORK ?? "eip155:84532") as `${string}:${string}`;
if (!key || !payTo) throw new Error("set TOOLGATE_API_KEY and PAY_TO");

const auth = { authorization: `Bearer ${key}` };
const facilitator = new HTTPFacilitatorClient({
  url: `${toolgate}/x402`,
  createAuthHeaders: async () => ({ verify: auth, settle: auth, supported: {} }),
});
const app = express();
app.use(
  paymentMiddleware(
    {
      "GET /weather": {
        accepts: {
          scheme: "exact",
          network,
          payTo,
          price: { amount: "10000", asset, extra: { name: "USDC", version: "2" } },
        },
      },
    },
    new x402ResourceServer(facilitator).register(network, new ExactEvmScheme()),
  ),
);
app.get("/weather", (_req, res) => void res.json({ forecast: "sunny" }));
const server = app.listen(Number(process.env.PORT ?? 4022), () =>
  console.log(
    `paid app on http://localhost:${(server.address() as { port: number }).port}/weather`,
  ),
);
