import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { developmentBanner } from "../../src/development.js";
import type { AccountRecord } from "../../src/store/types.js";

/** The banner `npm start` prints, as its x402 line reads with no chain running. */
const x402Line = (env: Record<string, string>) => {
  const config = loadConfig({ NODE_ENV: "development", PORT: "0", LOG_LEVEL: "silent", ...env });
  const account = { id: "acct_dev", tier: "pro", balance: 1000 } as AccountRecord;
  const banner = developmentBanner(config, { account, apiKey: "tg_…", created: true }, true, null);
  return banner.split("\n").find((line) => line.includes("x402:"));
};

describe("the development banner", () => {
  it("says why x402 is off: the chain turned off with DEV_CHAIN=0, or anvil missing", () => {
    expect(x402Line({ DEV_CHAIN: "0" })).toBe("  x402: off (DEV_CHAIN=0: no local chain started)");
    expect(x402Line({})).toBe(
      "  x402: off (no local chain: install Foundry's anvil or set ANVIL_BINARY)",
    );
  });
});
