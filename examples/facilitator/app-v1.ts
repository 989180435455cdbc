/**
 * An express app paid with x402 v1, Toolgate as its facilitator: the official `x402-express`
 * middleware verifies and settles every payment through Toolgate's `POST /x402/verify` and
 * `POST /x402/settle`, authenticated with a Toolgate API key of an account with the
 * `facilitator` feature. The money goes to PAY_TO, the app's own address.
 *
 *   TOOLGATE_URL=http://localhost:8402 TOOLGATE_API_KEY=tg_live_… PAY_TO=0x… \
 *   ASSET=0x… NETWORK=base-sepolia npx tsx examples/facilitator/app-v1.ts
 *
 * ASSET defaults to Base Sepolia's USDC; point it at the token Toolgate settles on NETWORK
 * (`GET $TOOLGATE_URL/x402/supported` lists them).
 */
import express from "express";
import { paymentMiddleware } from "x402-express";

const toolgate = process.env.TOOLGATE_URL ?? "http://localhost:8402";
const key = process.env.TOOLGATE_API_KEY ?? "";
const payTo = process.env.PAY_TO as `0x${string}`;
const asset = (process.env.ASSET ?? "0x036CbD53842c5426634e7929541eC2318f3dCF7e") as `0x${string}`;
const network = (process.env.NETWORK ?? "base-sepolia") as "base-sepolia";
if (!key || !payTo) throw new Error("set TOOLGATE_API_KEY and PAY_TO");

const auth = { "x-api-key": key };
const app = express();
app.use(
  paymentMiddleware(
    payTo,
    // $0.01 in USDC atomic units (6 decimals), with the token's EIP-712 name and version.
    {
      "GET /weather": {
        price: {
          amount: "10000",
          asset: { address: asset, decimals: 6, eip712: { name: "USDC", version: "2" } },
        },
        network,
      },
    },
    {
      url: `${toolgate}/x402` as `${string}://${string}`,
      createAuthHeaders: async () => ({ verify: auth, settle: auth, supported: {} }),
    },
  ),
);
app.get("/weather", (_req, res) => void res.json({ forecast: "sunny" }));
const server = app.listen(Number(process.env.PORT ?? 4021), () =>
  console.log(
    `paid app on http://localhost:${(server.address() as { port: number }).port}/weather`,
  ),
);
