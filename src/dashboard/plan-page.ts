import { TIERS, TIER_NAMES } from "../accounts/tiers.js";
import { atomicPrice, formatUsd } from "../lib/money.js";
import { esc } from "../pages/respond.js";
import { type PlanAvailability, planAvailability } from "../payments/plan-availability.js";
import { PACKS, PLANS, type PackName, type PlanName } from "../payments/price-list.js";
import type { Services } from "../services.js";
import { dashboardPage } from "./layout.js";
import type { DashboardSession } from "./session.js";
import { WALLET_SCRIPT_PATH } from "./wallet-sign-in.js";

/**
 * The Plan and credits page: the tiers and their prices, the account's plan, and the buttons that
 * buy a credit pack or a Starter / Pro period. A purchase is the API's own x402 purchase
 * (`POST /credits/purchase`, `POST /plans/purchase`, served under /dashboard/api/v1 with the
 * session as the buyer): the wallet script asks for it, reads the 402 offer, has the browser
 * wallet sign the EIP-3009 authorization (`eth_signTypedData_v4`), sends it as
 * `PAYMENT-SIGNATURE`, and shows the receipt (the settlement's transaction). The money goes from
 * whichever wallet the browser holds; the credits to the signed-in account.
 */
const number = (n: number) => n.toLocaleString("en-US");

const FEATURE_LABELS: Record<string, string> = {
  tools: "All tools",
  x402: "x402 payments",
  mcp: "MCP access",
  webhooks: "Webhook callbacks",
  priority_queue: "Priority queue",
  facilitator: "x402 facilitator",
  custom_endpoints: "Custom endpoints",
  dedicated_workers: "Dedicated workers",
  analytics: "Analytics",
  sso: "SSO",
};

function tiersTable(current: DashboardSession): string {
  const rows = TIER_NAMES.map((name) => {
    const tier = TIERS[name];
    const price =
      tier.priceUsdPerMonth === null
        ? "Volume discounts"
        : tier.priceUsdPerMonth === "0.00"
          ? "Free"
          : `$${tier.priceUsdPerMonth} / month`;
    const credits =
      tier.monthlyCredits === null
        ? "Custom"
        : name === "free"
          ? `${number(tier.monthlyCredits)} included (verified e-mail)`
          : `${number(tier.monthlyCredits)} / month`;
    const features = [
      ...tier.features.map((f) => FEATURE_LABELS[f] ?? f),
      ...tier.coming.map((f) => `${FEATURE_LABELS[f] ?? f} (coming)`),
    ];
    const isCurrent = current.account.tier === name;
    return `<tr${isCurrent ? ' aria-current="true"' : ""} data-tier="${name}"><th scope="row">${esc(tier.label)}${isCurrent ? ' <span class="muted">(your tier)</span>' : ""}</th><td>${price}</td><td>${credits}</td><td>${number(tier.requestsPerMinute)} / min</td><td>${esc(features.join(", "))}</td></tr>`;
  }).join("");
  // Scrolls sideways on a phone: focusable, so the keyboard can scroll it too.
  return `<div class="table-wrap" tabindex="0" role="region" aria-label="Tiers and their prices, scrollable"><table id="tiers-table" class="wide-last"><caption class="muted">Tiers and their prices</caption>
<thead><tr><th scope="col">Tier</th><th scope="col">Price</th><th scope="col">Credits</th><th scope="col">Rate limit</th><th scope="col">Includes</th></tr></thead>
<tbody>${rows}</tbody></table></div>`;
}

/** The networks' names for people ("Base Sepolia"), by the CAIP-2 id a receipt names. */
function networkLabels(services: Services): Record<string, string> {
  return Object.fromEntries(
    (services.payments?.config.networks ?? []).map((n) => [
      n.caip2,
      n.name.replace(
        /(^|-)(\w)/g,
        (_, dash: string, c: string) => `${dash ? " " : ""}${c.toUpperCase()}`,
      ),
    ]),
  );
}

/** Why a plan is not offered, in the account owner's terms. */
function whyNotOffered(refusal: Extract<PlanAvailability, { purchasable: false }>): string {
  const held = TIERS[refusal.held].label;
  return refusal.why === "higher_tier"
    ? `Your ${held} tier includes this.`
    : `Held without an end date: your ${held} tier does not expire, and a plan would give it an end.`;
}

function buyButtons(services: Services, current: DashboardSession): string {
  const packs = (Object.keys(PACKS) as PackName[]).map((name) => {
    const credits = PACKS[name];
    const price = formatUsd(atomicPrice(credits, services.config.creditPriceAtomic));
    return `<button type="button" data-buy="credits" data-item="${name}" data-what="${number(credits)} credits">Buy ${number(credits)} credits — $${price}</button>`;
  });
  // What the API would answer for each plan, by the same rule (planAvailability): a button only
  // for a plan it sells, and for the others the reason, so no button leads to a 409.
  const now = Date.now();
  const plans = (Object.keys(PLANS) as PlanName[]).map((name) => ({
    name,
    label: TIERS[PLANS[name].tier].label,
    price: formatUsd(PLANS[name].priceAtomic),
    availability: planAvailability(current.account, name, now),
  }));
  const offered = plans.flatMap(({ name, label, price, availability }) =>
    availability.purchasable
      ? [
          `<button type="button" data-buy="plans" data-item="${name}" data-what="the ${label} plan">${availability.type === "renewal" ? "Renew" : "Upgrade to"} ${label} — $${price} for 30 days</button>`,
        ]
      : [],
  );
  const notOffered = plans.flatMap(({ name, label, price, availability }) =>
    availability.purchasable
      ? []
      : [
          `<li data-plan="${name}"><strong>${label}</strong> ($${price} for 30 days): <span data-testid="plan-not-offered-${name}">${esc(whyNotOffered(availability))}</span></li>`,
        ],
  );
  return `<section aria-labelledby="packs-heading"><h2 id="packs-heading">Buy credits</h2>
<p>Credits never expire. Paid in USDC with x402 from your browser wallet: it asks you to sign a transfer authorization; the gateway sends it on chain.</p>
<p class="actions">${packs.join("")}</p></section>
<section id="plans" aria-labelledby="plans-heading"><h2 id="plans-heading">Plans</h2>
<p>A plan gives its tier and its monthly credits for 30 days; paying again before the end extends it. Upgrading keeps what the lower plan had left: its unused days count toward the new plan at the two plans' prices.</p>
${offered.length > 0 ? `<p class="actions">${offered.join("")}</p>` : ""}
${notOffered.length > 0 ? `<ul id="plans-not-offered">${notOffered.join("")}</ul>` : ""}</section>
<div id="purchase-status" class="muted" role="status" aria-live="polite"></div>
<section id="receipt" data-testid="purchase-receipt" aria-labelledby="receipt-heading" data-networks="${esc(JSON.stringify(networkLabels(services)))}" hidden><h2 id="receipt-heading">Receipt</h2>
<dl><dt>Bought</dt><dd data-field="what"></dd><dt>Paid</dt><dd data-field="paid"></dd><dt>Credits added</dt><dd data-field="credits"></dd><dt>Network</dt><dd data-field="network"></dd><dt>Transaction</dt><dd><code class="secret" data-field="transaction"></code></dd></dl></section>
<script src="${services.config.basePath}${WALLET_SCRIPT_PATH}" defer></script>`;
}

export async function renderPlanPage(
  services: Services,
  current: DashboardSession,
): Promise<string> {
  const { account } = current;
  const tier = TIERS[account.tier];
  const planEnds =
    account.planExpiresAt > Date.now()
      ? `<div class="card"><dt>Plan period ends</dt><dd data-testid="plan-expires"><time datetime="${new Date(account.planExpiresAt).toISOString()}">${new Date(account.planExpiresAt).toISOString().slice(0, 10)}</time></dd></div>`
      : "";
  const buying = services.payments
    ? buyButtons(services, current)
    : `<p class="notice">This gateway takes no x402 payments (no X402_NETWORKS configured): ask its operator for credits or a plan.</p>`;
  const body = `
<dl class="cards">
<div class="card"><dt>Credit balance</dt><dd data-testid="credits-balance">${account.balance}</dd></div>
<div class="card"><dt>Tier</dt><dd data-testid="tier">${esc(tier.label)}</dd></div>
${planEnds}
</dl>
${buying}
<section aria-labelledby="tiers-heading"><h2 id="tiers-heading">Tiers</h2>${tiersTable(current)}</section>`;
  return dashboardPage(current, {
    basePath: services.config.basePath,
    title: "Plan and credits",
    path: "/dashboard/plan",
    body,
  });
}
