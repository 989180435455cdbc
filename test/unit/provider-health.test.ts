import { describe, expect, it } from "vitest";
import { componentChecks } from "../../src/status/components.js";
import { ProviderHealth } from "../../src/status/provider-health.js";

/**
 * The provider's status check weighs each account's provider failures once per round: a caller
 * steering the provider into its own timeouts (free, refunded) cannot outweigh everyone's
 * successes by sending many, while a provider failing everyone still reads degraded.
 */
function providerCheck() {
  const providerHealth = new ProviderHealth();
  const services = {
    metrics: { statusProbeToken: "probe" },
    books: null,
    payments: null,
    store: { ping: async () => {} },
    pools: { settings: { urls: {} }, unavailableReason: () => null },
    providerHealth,
  };
  const check = componentChecks(services as never, "http://127.0.0.1:1").find(
    (c) => c.id === "provider-ai-extract",
  )!;
  return { providerHealth, run: () => check.check(AbortSignal.timeout(1000)) };
}

describe("the provider's status check", () => {
  it("one account's many provider failures weigh one against the calls served", async () => {
    const { providerHealth, run } = providerCheck();
    for (let i = 0; i < 20; i++) providerHealth.providerFailed("ai-extract", "acc_steering");
    providerHealth.served("ai-extract");
    providerHealth.served("ai-extract");
    expect(await run()).toEqual({ state: "operational", detail: null });
  });

  it("reads degraded when the provider fails most of the accounts calling it, or the only one", async () => {
    const { providerHealth, run } = providerCheck();
    for (const account of ["acc_a", "acc_b", "acc_c"])
      providerHealth.providerFailed("ai-extract", account);
    providerHealth.served("ai-extract");
    expect(await run()).toEqual({
      state: "degraded",
      detail: "the provider failed calls of 3 accounts since the last check (1 served)",
    });
    // Each round counts what came since the last.
    expect((await run()).state).toBe("operational");
    providerHealth.providerFailed("ai-extract", "acc_alone");
    expect((await run()).state).toBe("degraded");
  });

  it("counts each tool's calls against its own provider component only", async () => {
    const { providerHealth, run } = providerCheck();
    providerHealth.providerFailed("ai-generate", "acc_a");
    expect((await run()).state).toBe("operational");
  });
});
