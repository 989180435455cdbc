import { describe, expect, it } from "vitest";
import { endpointLimits } from "../../src/http/endpoint-limits.js";
import { RefusalLimit } from "../../src/http/refusal-limit.js";
import { PERIOD_MS } from "../../src/accounts/tiers.js";
import { tierLimits } from "../../src/store/index.js";
import { createMemoryStore } from "../../src/store/memory.js";
import type { Config } from "../../src/config.js";

/** A limit of two refusals a second, on the in-memory store. */
function twoASecond(): RefusalLimit {
  const config = {
    env: "development",
    endpointLimits: endpointLimits("refused-credentials=2/1", []),
  } as unknown as Config;
  const store = createMemoryStore({ tiers: tierLimits(), periodMs: PERIOD_MS });
  return new RefusalLimit({ config, store }, "refused-credentials", "");
}

describe("a limit that counts refusals", () => {
  it("holds an address once its refusals fill the window, and no other", async () => {
    const limit = twoASecond();
    expect(limit.blocking).toBe(false);
    await limit.count("198.51.100.1", "r1");
    expect(limit.blocking).toBe(false);
    await limit.count("198.51.100.1", "r2");
    expect(limit.blocking).toBe(true);
    expect(() => limit.check("198.51.100.1")).toThrow(
      /At most 2 requests with refused credentials/,
    );
    expect(() => limit.check("198.51.100.2")).not.toThrow();
  });

  it("stops holding anyone once every hold has ended, whether or not the address came back", async () => {
    const limit = twoASecond();
    await limit.count("198.51.100.3", "r1");
    await limit.count("198.51.100.3", "r2");
    expect(limit.blocking).toBe(true);
    await new Promise((r) => setTimeout(r, 1100));
    // Before, the entry stayed until that address was checked again, and `blocking` with it.
    expect(limit.blocking).toBe(false);
    expect(() => limit.check("198.51.100.3")).not.toThrow();
  });
});
