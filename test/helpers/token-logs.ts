import { encodeAbiParameters, encodeEventTopics, type Address, type Hex, type Log } from "viem";
import { tokenAbi } from "../../src/payments/verify.js";

/**
 * Logs as the project's EIP-3009 token emits them for one transfer with authorization, encoded
 * from its own ABI: AuthorizationUsed(authorizer, nonce), then Transfer(from, to, value).
 */
const log = (address: Address, topics: Hex[], data: Hex = "0x") =>
  ({ address, topics, data }) as unknown as Log;
const topics = (eventName: "AuthorizationUsed" | "Transfer", args: Record<string, unknown>) =>
  encodeEventTopics({ abi: tokenAbi, eventName, args } as never) as Hex[];

export const authorizationUsedLog = (token: Address, authorizer: Address, nonce: Hex) =>
  log(token, topics("AuthorizationUsed", { authorizer, nonce }));

export const transferLog = (token: Address, from: Address, to: Address, value: bigint) =>
  log(token, topics("Transfer", { from, to }), encodeAbiParameters([{ type: "uint256" }], [value]));
