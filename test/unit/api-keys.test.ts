import { describe, expect, it } from "vitest";
import { generateApiKey, hashApiKey, parseApiKey } from "../../src/accounts/api-keys.js";
import { newAccountId } from "../../src/lib/ids.js";

describe("API key format", () => {
  it("names its account, stores only a hash, and shows a prefix and last four", () => {
    const id = newAccountId();
    const key = generateApiKey(id);
    expect(key.plaintext).toMatch(/^tg_live_[0-9a-z]{16}_[0-9A-Za-z]{32}$/);
    expect(parseApiKey(key.plaintext)).toEqual({ accountId: id, hash: key.hash });
    expect(key.hash).toBe(hashApiKey(key.plaintext));
    expect(key.hash).not.toContain(key.plaintext.slice(-32));
    expect(key.plaintext.startsWith(key.prefix)).toBe(true);
    expect(key.plaintext.endsWith(key.last4)).toBe(true);
  });

  it("never repeats a secret", () => {
    const id = newAccountId();
    const secrets = new Set(Array.from({ length: 2000 }, () => generateApiKey(id).plaintext));
    expect(secrets.size).toBe(2000);
  });

  it.each([
    "",
    "tg_live_",
    `tg_test_abcdefghijklmnop_${"A".repeat(32)}`,
    `tg_live_ABCDEFGHIJKLMNOP_${"A".repeat(32)}`,
    `tg_live_abcdefghijklmnop_${"A".repeat(31)}`,
    `tg_live_abcdefghijklmnop_${"A".repeat(31)}-`,
  ])("refuses the malformed key %j without a store lookup", (key) =>
    expect(parseApiKey(key)).toBeNull(),
  );
});
