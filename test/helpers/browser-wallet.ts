import type { Page } from "playwright-core";
import type { LocalAccount, TypedDataDefinition, Hex } from "viem";

/**
 * A browser wallet for the browser tests: an EIP-1193 provider injected as `window.ethereum`
 * (page.addInitScript) that forwards each request to the test process (page.exposeFunction),
 * where `account` signs with viem — the way a wallet extension answers a page:
 * `eth_requestAccounts`, `eth_chainId`, `wallet_switchEthereumChain`, `personal_sign`,
 * `eth_signTypedData_v4`.
 */
interface WalletRequest {
  method: string;
  params: unknown[];
}

/** The test side of the injected wallet: answers the page's EIP-1193 requests by signing with `account`. */
export function walletFor(account: LocalAccount) {
  const requests: WalletRequest[] = [];
  let chainId = 84532;
  async function answer(method: string, params: unknown[]): Promise<unknown> {
    requests.push({ method, params });
    switch (method) {
      case "eth_requestAccounts":
      case "eth_accounts":
        return [account.address];
      case "eth_chainId":
        return `0x${chainId.toString(16)}`;
      case "wallet_switchEthereumChain": {
        const wanted = Number.parseInt((params[0] as { chainId: string }).chainId, 16);
        if (![84532, 80002].includes(wanted)) throw new Error("Unrecognized chain ID");
        chainId = wanted;
        return null;
      }
      case "personal_sign": {
        const [raw, from] = params as [Hex, string];
        if (from.toLowerCase() !== account.address.toLowerCase())
          throw new Error("unknown account");
        return account.signMessage({ message: { raw } });
      }
      case "eth_signTypedData_v4": {
        const [from, json] = params as [string, string];
        if (from.toLowerCase() !== account.address.toLowerCase())
          throw new Error("unknown account");
        const { types, primaryType, domain, message } = JSON.parse(json);
        const { EIP712Domain: _, ...rest } = types;
        // JSON carries uint256 as decimal strings; viem signs bigints.
        const values = Object.fromEntries(
          Object.entries(message as Record<string, unknown>).map(([name, value]) => {
            const type = rest[primaryType].find((f: { name: string }) => f.name === name)?.type;
            return [name, type?.startsWith("uint") ? BigInt(value as string) : value];
          }),
        );
        return account.signTypedData({
          domain,
          types: rest,
          primaryType,
          message: values,
        } as TypedDataDefinition);
      }
      default:
        throw new Error(`The test wallet does not support ${method}`);
    }
  }
  return { requests, answer };
}

/** Injects `account`'s wallet into `page` (before its scripts run); returns what it was asked. */
export async function injectWallet(page: Page, account: LocalAccount) {
  const wallet = walletFor(account);
  await page.exposeFunction("__testWallet", async (method: string, params: string) =>
    JSON.stringify(await wallet.answer(method, JSON.parse(params))),
  );
  await page.addInitScript(() => {
    const forward = (window as unknown as { __testWallet(m: string, p: string): Promise<string> })
      .__testWallet;
    (window as unknown as { ethereum: unknown }).ethereum = {
      isTestWallet: true,
      async request({ method, params }: { method: string; params?: unknown[] }) {
        return JSON.parse(await forward(method, JSON.stringify(params ?? [])));
      },
    };
  });
  return wallet;
}
