import { parseHTML } from "linkedom";
import { describe, expect, it } from "vitest";
import { PLANS } from "../../src/payments/price-list.js";
import { admin, call, dashboardSession, signUp } from "../helpers/gateway.js";
import { paidGatewayFixture } from "../helpers/x402.js";

/**
 * The Plan and credits page over HTTP, against a real gateway on Redis with x402 on two anvil
 * chains: it offers a plan only where POST /plans/purchase would sell it, and says why not for the
 * others — for each kind of account the purchase rule (planOutcome) tells apart. Every offered
 * button is then asked of the API, which must answer the 402 offer, never 409.
 */
const setup = paidGatewayFixture();

const signedIn = (key: string) => dashboardSession(setup.gw.url, key);

/** What the page shows about plans: the buttons' labels and, per plan not offered, its reason. */
async function plansShown(cookie: string) {
  const res = await fetch(`${setup.gw.url}/dashboard/plan`, { headers: { cookie } });
  expect(res.status).toBe(200);
  const { document } = parseHTML(await res.text());
  const section = document.querySelector("section[aria-labelledby=plans-heading]")!;
  const text = (el: Element | null) => el?.textContent?.replace(/\s+/g, " ").trim() ?? null;
  return {
    buttons: [...section.querySelectorAll("button")].map((b) => text(b)),
    plansOffered: [...section.querySelectorAll("button[data-buy=plans]")].map((b) =>
      b.getAttribute("data-item"),
    ),
    notOffered: Object.fromEntries(
      [...section.querySelectorAll("li[data-plan]")].map((li) => [
        li.getAttribute("data-plan"),
        text(li),
      ]),
    ),
    csrf: document.querySelector('meta[name="csrf-token"]')!.getAttribute("content")!,
  };
}

/** Each offered plan, asked of the dashboard's purchase endpoint as the page's script asks it. */
async function askEach(cookie: string, csrf: string, plans: (string | null)[]) {
  return Promise.all(
    plans.map(async (plan) => {
      const res = await call(`${setup.gw.url}/dashboard/api/v1/plans/purchase`, {
        body: { plan },
        headers: { cookie, "x-csrf-token": csrf },
      });
      return [plan, res.status];
    }),
  );
}

describe("the Plan page offers only the plans the API sells", () => {
  it("a Free account: both plans, as upgrades", async () => {
    const { key } = await signUp(setup.gw.url);
    const cookie = await signedIn(key);
    const shown = await plansShown(cookie);
    expect(shown.buttons).toEqual([
      "Upgrade to Starter — $19.00 for 30 days",
      "Upgrade to Pro — $49.00 for 30 days",
    ]);
    expect(shown.notOffered).toEqual({});
    expect(await askEach(cookie, shown.csrf, shown.plansOffered)).toEqual([
      ["starter", 402],
      ["pro", 402],
    ]);
  });

  it("a Starter account with an end date: renew Starter, upgrade to Pro", async () => {
    const { key, accountId } = await signUp(setup.gw.url);
    await setup.gw.services.store.topUp(
      accountId,
      "purchase",
      { amount: PLANS.starter.credits, requestId: `req_plan_${accountId}`, reason: "plan starter" },
      [],
      { tier: "starter", periodMs: setup.gw.services.config.planPeriodMs },
    );
    const cookie = await signedIn(key);
    const shown = await plansShown(cookie);
    expect(shown.buttons).toEqual([
      "Renew Starter — $19.00 for 30 days",
      "Upgrade to Pro — $49.00 for 30 days",
    ]);
    expect(shown.notOffered).toEqual({});
    expect(await askEach(cookie, shown.csrf, shown.plansOffered)).toEqual([
      ["starter", 402],
      ["pro", 402],
    ]);
  });

  it("a Business account: no plan button, each plan says the tier includes it", async () => {
    const { key, accountId } = await signUp(setup.gw.url);
    await admin(setup.gw.url, `/accounts/${accountId}/tier`, {
      method: "PUT",
      body: { tier: "business" },
    });
    const cookie = await signedIn(key);
    const shown = await plansShown(cookie);
    expect(shown.plansOffered).toEqual([]);
    expect(shown.notOffered).toEqual({
      starter: "Starter ($19.00 for 30 days): Your Business tier includes this.",
      pro: "Pro ($49.00 for 30 days): Your Business tier includes this.",
    });
    expect(shown.buttons).toEqual([]);
  });

  it("a Pro account granted by the operator without an end date: neither plan; Pro says it is held without an end date", async () => {
    const { key, accountId } = await signUp(setup.gw.url);
    await admin(setup.gw.url, `/accounts/${accountId}/tier`, {
      method: "PUT",
      body: { tier: "pro" },
    });
    const cookie = await signedIn(key);
    const shown = await plansShown(cookie);
    expect(shown.plansOffered).toEqual([]);
    expect(shown.notOffered).toEqual({
      starter: "Starter ($19.00 for 30 days): Your Pro tier includes this.",
      pro: "Pro ($49.00 for 30 days): Held without an end date: your Pro tier does not expire, and a plan would give it an end.",
    });
    // What the page no longer offers, the API indeed refuses.
    expect(await askEach(cookie, shown.csrf, ["starter", "pro"])).toEqual([
      ["starter", 409],
      ["pro", 409],
    ]);
  });
});
