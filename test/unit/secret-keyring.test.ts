import { describe, expect, it } from "vitest";
import { readVerificationToken, verificationToken } from "../../src/accounts/email-verification.js";
import { SecretUnreadableError, openSecret, sealSecret } from "../../src/webhooks/secrets.js";

/** SECRET_KEY as a keyring: the first key seals and signs, every key opens and verifies. */
const [oldKey, newKey, otherKey] = ["o".repeat(32), "n".repeat(32), "x".repeat(32)];

describe("a rotated SECRET_KEY (new first, old kept after it)", () => {
  it("opens webhook secrets sealed with the old key, and seals new ones with the new key", () => {
    const sealedBefore = sealSecret([oldKey], "whsec_abc");
    expect(openSecret([newKey, oldKey], sealedBefore)).toBe("whsec_abc");
    const sealedAfter = sealSecret([newKey, oldKey], "whsec_def");
    expect(openSecret([newKey], sealedAfter)).toBe("whsec_def");
    expect(() => openSecret([oldKey], sealedAfter)).toThrow(SecretUnreadableError);
  });

  it("says clearly when no key of the ring opens a secret", () => {
    expect(() => openSecret([otherKey], sealSecret([oldKey], "whsec_abc"))).toThrow(
      "the webhook secret was sealed with a key that is not in SECRET_KEY (1 key(s) tried)",
    );
  });

  it("accepts verification links signed with any key of the ring, and no others", () => {
    const link = verificationToken(oldKey, "acct_0123456789abcdef");
    expect(readVerificationToken([newKey, oldKey], link)).toBe("acct_0123456789abcdef");
    expect(readVerificationToken([newKey], link)).toBeNull();
  });
});
