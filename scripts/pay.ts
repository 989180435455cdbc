/**
 * Pays for one tool call with x402 from one of anvil's standard test accounts, with the official
 * x402-fetch client — against the local chain that `npm start` runs in development.
 *
 *   npm run pay -- hash '{"text":"hello"}'          (TOOLGATE_URL, PAYER_INDEX, CHAIN_RPC_URL to change)
 */
import { createWalletClient, defineChain, http, publicActions } from "viem";
import { decodeXPaymentResponse, wrapFetchWithPayment } from "x402-fetch";
import { anvilAccount } from "../chain-fixtures/chain.js";

const [tool = "hash", input = '{"text":"hello"}'] = process.argv.slice(2);
const base = process.env.TOOLGATE_URL ?? "http://localhost:8402";
const supported = (await (await fetch(`${base}/x402/supported`)).json()) as {
  kinds: { network: string }[];
};
if (!supported.kinds.some((k) => k.network === "base-sepolia"))
  throw new Error(`${base} accepts no base-sepolia payments`);
const rpc = process.env.CHAIN_RPC_URL;
if (!rpc) throw new Error("Set CHAIN_RPC_URL to the local chain's address that npm start printed.");
const chain = defineChain({
  id: 84532,
  name: "base-sepolia (local)",
  nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
  rpcUrls: { default: { http: [rpc] } },
});
const payer = anvilAccount(Number(process.env.PAYER_INDEX ?? 1));
const wallet = createWalletClient({ account: payer, chain, transport: http(rpc) }).extend(
  publicActions,
);
const res = await wrapFetchWithPayment(fetch, wallet as never)(`${base}/v1/tools/${tool}`, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: input,
});
console.log(`HTTP ${res.status}`);
console.log(JSON.stringify(await res.json(), null, 2));
const receipt = res.headers.get("x-payment-response");
if (receipt) console.log("paid:", decodeXPaymentResponse(receipt));
