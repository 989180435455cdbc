import { BooksUnavailableError } from "../books/errors.js";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { z } from "zod";
import { keyView } from "../accounts/views.js";
import { TIERS } from "../accounts/tiers.js";
import {
  accountAnalytics,
  GROUPINGS,
  type AnalyticsFigures,
  type Granularity,
} from "../books/analytics.js";
import { esc } from "../pages/respond.js";
import type { Services } from "../services.js";
import { dashboardPage } from "./layout.js";
import type { DashboardSession } from "./session.js";

/**
 * The Analytics page (Pro and Business): a range and a grouping chosen with a plain GET form,
 * the figures computed in SQL (books/analytics.ts, the same as GET /api/v1/analytics) rendered
 * here as a table — the page's data without a script — and drawn as charts by
 * assets/analytics.js with uPlot, served from its installed package (no CDN). The CSV link is
 * the account API's own export, under /dashboard/api/v1 with the session.
 */
export const UPLOT_SCRIPT_PATH = "/dashboard/assets/uplot.js";
export const ANALYTICS_SCRIPT_PATH = "/dashboard/assets/analytics.js";

const uplotFile = (name: string) =>
  readFileSync(createRequire(import.meta.url).resolve(`uplot/dist/${name}`), "utf8");
/** uPlot's browser build and its stylesheet (inlined in the page: the pages' CSP loads no style files). */
export const uplotAssets = () => ({
  script: uplotFile("uPlot.iife.min.js"),
  style: uplotFile("uPlot.min.css"),
});

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const RANGES = {
  "24h": { label: "Last 24 hours, hourly", granularity: "hour", ms: DAY_MS },
  "7d": { label: "Last 7 days, hourly", granularity: "hour", ms: 7 * DAY_MS },
  "30d": { label: "Last 30 days, daily", granularity: "day", ms: 30 * DAY_MS },
  "90d": { label: "Last 90 days, daily", granularity: "day", ms: 90 * DAY_MS },
} as const satisfies Record<string, { label: string; granularity: Granularity; ms: number }>;
type RangeName = keyof typeof RANGES;
const GROUP_LABELS = { "": "Nothing (totals)", tool: "Tool", key: "API key", status: "Status" };

/** The form's choice; anything else is the default (a page never fails on its own form). */
const pageQuery = z.object({
  range: z.enum(Object.keys(RANGES) as [RangeName, ...RangeName[]]).catch("24h"),
  group_by: z.enum(GROUPINGS).optional().catch(undefined),
});

const ms = (n: number | null) => (n === null ? "—" : `${n} ms`);
const figureCells = (f: AnalyticsFigures) =>
  `<td>${f.calls}</td><td>${f.credits}</td><td>${f.errors}</td><td>${ms(f.latencyP50Ms)}</td><td>${ms(f.latencyP95Ms)}</td>`;

export async function renderAnalyticsPage(
  services: Services,
  current: DashboardSession,
  rawQuery: unknown,
  uplotStyle: string,
): Promise<string> {
  const { account } = current;
  const page = (body: string) =>
    dashboardPage(current, {
      basePath: services.config.basePath,
      title: "Analytics",
      path: "/dashboard/analytics",
      body,
      head: `<style>${uplotStyle}.chart{margin:1rem 0}.chart figcaption{font-weight:600}</style>`,
      scripts: [UPLOT_SCRIPT_PATH, ANALYTICS_SCRIPT_PATH],
    });
  if (!TIERS[account.tier].features.includes("analytics"))
    return page(
      `<p class="notice" data-testid="analytics-not-in-tier">Analytics are included from the Pro tier; this account is on ${esc(TIERS[account.tier].label)}. Upgrade to see your calls, credits, errors and latency per hour, day, tool, key and status.</p>`,
    );
  if (!services.books)
    return page(
      `<p class="notice error">Analytics read the books, and this gateway runs without them (DATABASE_URL=none).</p>`,
    );

  const query = pageQuery.parse(rawQuery ?? {});
  const range = RANGES[query.range];
  const unit = range.granularity === "hour" ? HOUR_MS : DAY_MS;
  // The range ends with the current (unfinished) hour or day, so every bucket is a whole one.
  const to = Math.floor(Date.now() / unit) * unit + unit;
  const from = to - range.ms;
  const groupBy = query.group_by ?? null;
  const [answer, keys] = await Promise.all([
    services.books
      .ready(5000)
      .then((db) =>
        accountAnalytics(db, account.id, { from, to, granularity: range.granularity, groupBy }),
      )
      // Unreachable books: the page says so (the API's 503 JSON came in its place).
      .catch((err: unknown) => {
        if (err instanceof BooksUnavailableError) return null;
        throw err;
      }),
    services.store.listKeys(account.id),
  ]);
  if (!answer)
    return page(
      `<p class="notice error" data-testid="analytics-unavailable">Analytics read the books, which cannot be reached right now; calls are still served and charged. Try again in a little while.</p>`,
    );
  const keyLabels: Record<string, string> = Object.fromEntries(
    keys
      .map((key) => keyView(key))
      // The name isolated (U+2068…U+2069): one stored before names were checked could still
      // reverse the prefix after it.
      .map((k) => [k.id, `${k.name ? `\u2068${k.name}\u2069 ` : ""}${k.prefix}…${k.last4}`]),
  );
  const groupLabel = (group: string | null) =>
    groupBy === "key" ? (group ? (keyLabels[group] ?? group) : "x402 (no key)") : (group ?? "");

  const apiQuery = new URLSearchParams({
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    granularity: range.granularity,
    ...(groupBy ? { group_by: groupBy } : {}),
  });
  const options = (entries: [string, string][], chosen: string) =>
    entries
      .map(
        ([value, label]) =>
          `<option value="${value}"${value === chosen ? " selected" : ""}>${esc(label)}</option>`,
      )
      .join("");
  const form = `<form method="get" action="${services.config.basePath}/dashboard/analytics" class="actions" aria-label="Analytics range">
<div><label for="range">Range</label><select id="range" name="range">${options(
    Object.entries(RANGES).map(([name, r]) => [name, r.label]),
    query.range,
  )}</select></div>
<div><label for="group_by">Split by</label><select id="group_by" name="group_by">${options(
    Object.entries(GROUP_LABELS),
    groupBy ?? "",
  )}</select></div>
<div><label for="apply" class="muted">&nbsp;</label><button id="apply" type="submit">Show</button></div>
</form>`;

  const chartData = {
    from,
    to,
    unit,
    grouped: groupBy !== null,
    rows: answer.buckets.map((b) => ({ ...b, label: groupLabel(b.group) })),
  };
  const rows = answer.buckets
    .map(
      (b) =>
        `<tr><td><time datetime="${new Date(b.bucket).toISOString()}">${new Date(b.bucket)
          .toISOString()
          .replace("T", " ")
          .slice(
            0,
            range.granularity === "hour" ? 16 : 10,
          )}</time></td>${groupBy ? `<td>${esc(groupLabel(b.group))}</td>` : ""}${figureCells(b)}</tr>`,
    )
    .join("");
  const body = `${form}
<dl class="cards" data-testid="analytics-totals">
<div class="card"><dt>Calls</dt><dd data-total="calls">${answer.totals.calls}</dd></div>
<div class="card"><dt>Credits</dt><dd data-total="credits">${answer.totals.credits}</dd></div>
<div class="card"><dt>Errors</dt><dd data-total="errors">${answer.totals.errors}</dd></div>
<div class="card"><dt>Latency p50 / p95</dt><dd data-total="latency">${ms(answer.totals.latencyP50Ms)} / ${ms(answer.totals.latencyP95Ms)}</dd></div>
</dl>
<p><a class="button" id="analytics-csv-link" data-testid="analytics-csv" href="${services.config.basePath}/dashboard/api/v1/analytics?${esc(`${apiQuery}&format=csv`)}" download="analytics.csv">Download CSV</a>
<span class="muted">Times are UTC; calls appear here within a few seconds of being made (once the books have them).</span></p>
<div id="analytics-charts" data-analytics="${esc(JSON.stringify(chartData))}"></div>
<h2 id="table-heading">Per ${range.granularity}${groupBy ? ` and ${GROUP_LABELS[groupBy].toLowerCase()}` : ""}</h2>
${
  answer.buckets.length === 0
    ? `<p data-testid="analytics-empty">No calls in this range.</p>`
    : `<div class="table-wrap" tabindex="0" role="region" aria-labelledby="table-heading"><table aria-labelledby="table-heading" data-testid="analytics-table"><thead><tr><th scope="col">${range.granularity === "hour" ? "Hour" : "Day"} (UTC)</th>${groupBy ? `<th scope="col">${esc(GROUP_LABELS[groupBy])}</th>` : ""}<th scope="col">Calls</th><th scope="col">Credits</th><th scope="col">Errors</th><th scope="col">Latency p50</th><th scope="col">Latency p95</th></tr></thead><tbody>${rows}</tbody></table></div>`
}`;
  return page(body);
}
