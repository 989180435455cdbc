import { encodeAbiParameters, encodeEventTopics, type Address, type Hex, type Log } from "viem";
import { tokenAbi } from "../../src/payments/verify.js";

/**
 * Logs as the project's EIP-3009 token emits them for one transfer with authorization, encoded
 * from its own ABI: AuthorizationUsed(authorizer, nonce), then Transfer(from, to, value).
 */
const log = (address: Address, topics: Hex[], data: Hex = "0x") =>
  ({ address, topics, data }) as unknown as Log;

export const authorizationUsedLog = (token: Address, authorizer: Address, nonce: Hex) =>
  log(
    token,
    encodeEventTopics({
      abi: tokenAbi,
      eventName: "AuthorizationUsed",
      args: { authorizer, nonce },
    } as never) as Hex[],
  );

export const transferLog = (token: Address, from: Address, to: Address, value: bigint) =>
  log(
    token,
    encodeEventTopics({
      abi: tokenAbi,
      eventName: "Transfer",
      args: { from, to },
    } as never) as Hex[],
    encodeAbiParameters([{ type: "uint256" }], [value]),
  );
