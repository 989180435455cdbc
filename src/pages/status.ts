import type { StatusReport } from "../status/report.js";
import { esc, layout } from "./respond.js";
import { renderRss } from "./rss.js";

/**
 * /status (HTML) and /status.rss (incidents) from the same report as /status.json. The page
 * refreshes itself (a meta refresh, no script) only when the reader asks, at /status?refresh=auto:
 * a page that reloads unasked moves a screen reader's place and a keyboard's focus back to the
 * top (WCAG 2.2.1), so by default it offers the choice. It refreshes once per check interval, at
 * most every 30 s.
 */
const STATE_LABEL: Record<string, string> = {
  operational: "Operational",
  degraded: "Degraded",
  not_configured: "Not configured",
  unknown: "Not checked yet",
};

/**
 * `ok` of `total` as a percentage, floored to two decimals: rounded, 99.996% read "100.00%" though
 * checks failed. "100%" only when none did. From the counts, not /status.json's rounded figure.
 */
const percentOf = (ok: number, total: number) =>
  total === 0
    ? "—"
    : ok === total
      ? "100%"
      : `${(Math.floor((ok * 10_000) / total) / 100).toFixed(2)}%`;
const uptimeOf = (days: { ok: number; total: number }[]) =>
  percentOf(
    days.reduce((n, d) => n + d.ok, 0),
    days.reduce((n, d) => n + d.total, 0),
  );
const ms = (n: number | null) => (n === null ? "—" : `${n} ms`);
const utcMinute = (iso: string) => `${iso.replace("T", " ").slice(0, 16)} UTC`;

function uptimeBar(days: { day: string; ok: number; total: number }[]): string {
  const byDay = new Map(days.map((d) => [d.day, d]));
  const cells: string[] = [];
  for (let i = 89; i >= 0; i--) {
    const day = new Date(Date.now() - i * 86_400_000).toISOString().slice(0, 10);
    const d = byDay.get(day);
    const ratio = d && d.total > 0 ? d.ok / d.total : null;
    const color =
      ratio === null
        ? "#d0d5dd"
        : ratio >= 0.999
          ? "#2da44e"
          : ratio >= 0.95
            ? "#d4a72c"
            : "#cf222e";
    const title =
      ratio === null
        ? `${day}: no checks`
        : `${day}: ${percentOf(d!.ok, d!.total)} of ${d!.total} checks`;
    cells.push(
      `<span title="${esc(title)}" style="display:inline-block;width:5px;height:22px;margin-right:1px;background:${color}"></span>`,
    );
  }
  return `<div aria-label="uptime per day, last 90 days" style="white-space:nowrap;overflow:hidden">${cells.join("")}</div>`;
}

function incidentHtml(incident: StatusReport["incidents"]["active"][number]): string {
  return `<article id="${esc(incident.id)}"><h3>${esc(incident.title)} <span class="pill ${incident.impact === "major" ? "major" : "degraded"}">${esc(incident.impact)}</span> <span class="muted">${esc(incident.status)}</span></h3>
${incident.components.length ? `<p class="muted">Affects: ${incident.components.map((c) => `<code>${esc(c)}</code>`).join(", ")}</p>` : ""}
<ul>${[...incident.updates]
    .reverse()
    .map(
      (u) =>
        `<li><strong>${esc(u.status)}</strong> <time datetime="${esc(u.at)}" class="muted">${esc(utcMinute(u.at))}</time> — ${esc(u.message)}</li>`,
    )
    .join("")}</ul></article>`;
}

/** While the shared store cannot be read: what the page shows instead, and since when. */
function storeUnreadableNotice(report: StatusReport): string {
  if (report.history_available) return "";
  const asOf = report.incidents.as_of;
  const incidents = asOf
    ? `incidents are shown as last read, at <time datetime="${esc(asOf)}">${esc(utcMinute(asOf))}</time>, and may be out of date`
    : "incidents cannot be shown";
  return `<p class="degraded"><strong>The status store cannot be read right now:</strong> states are this gateway process's own latest checks, without uptime history; ${incidents}.</p>`;
}

/** `basePath`: config.basePath, before the page's own addresses. */
export function renderStatusPage(
  report: StatusReport,
  options: { autoRefresh: boolean; basePath: string },
): string {
  const base = options.basePath;
  const refreshSeconds = Math.max(30, Math.round(report.check_interval_ms / 1000));
  const groups = [...new Set(report.components.map((c) => c.group))];
  const rows = groups
    .map(
      (
        group,
      ) => `<h2>${esc(group)}</h2><div class="table-scroll" tabindex="0" role="region" aria-label="${esc(group)}: components, scrollable"><table><thead><tr><th>Component</th><th>State</th><th>Uptime (90 days)</th><th>Latency p50 / p95 / p99</th></tr></thead><tbody>
${report.components
  .filter((c) => c.group === group)
  .map(
    (c) => `<tr id="${esc(c.id)}"><td>${esc(c.name)}<br><code class="muted">${esc(c.id)}</code></td>
<td><span class="pill ${esc(c.state)}">${esc(STATE_LABEL[c.state] ?? c.state)}</span>${c.detail ? `<br><span class="muted">${esc(c.detail)}</span>` : ""}</td>
<td>${uptimeOf(c.days)}${uptimeBar(c.days)}</td>
<td>${ms(c.latency_ms.p50)} / ${ms(c.latency_ms.p95)} / ${ms(c.latency_ms.p99)}<br><span class="muted">${c.latency_ms.source === "http" ? `${c.latency_ms.samples} requests` : `${c.latency_ms.samples} checks`}</span></td></tr>`,
  )
  .join("\n")}</tbody></table></div>`,
    )
    .join("\n");
  const active = report.incidents.active;
  return layout({
    title: "Toolgate status",
    basePath: base,
    head: `${options.autoRefresh ? `<meta http-equiv="refresh" content="${refreshSeconds}">` : ""}<link rel="alternate" type="application/rss+xml" title="Toolgate incidents" href="${base}/status.rss">`,
    body: `<h1>Status: <span class="pill ${report.status}">${report.status === "operational" ? "All systems operational" : "Some systems degraded"}</span></h1>
<p class="muted">Checked every ${report.check_interval_ms / 1000} s in the background by each gateway process; uptime is the share of recorded checks that found a component operational. Updated ${esc(report.updated_at)}; ${options.autoRefresh ? `refreshing every ${refreshSeconds} s: <a href="${base}/status">Stop refreshing</a>` : `<a href="${base}/status?refresh=auto">Refresh every ${refreshSeconds} s</a>`}. Machine-readable: <a href="${base}/status.json">${base}/status.json</a>; incidents as a feed: <a href="${base}/status.rss">${base}/status.rss</a>.</p>
${storeUnreadableNotice(report)}
${active.length ? `<h2>Active incidents</h2>${active.map(incidentHtml).join("\n")}` : ""}
${rows}
<h2>Past incidents</h2>${report.incidents.recent.length ? report.incidents.recent.map(incidentHtml).join("\n") : `<p class="muted">${report.incidents.as_of ? "No incidents reported." : "Incidents cannot be read right now."}</p>`}`,
  });
}

/**
 * One item per incident update, each with its own guid and pubDate, so a feed reader shows every
 * update and the resolution as news (one item per incident, rewritten in place, was read once and
 * never again). The item's description is its update's message.
 */
export function renderStatusRss(report: StatusReport, baseUrl: string): string {
  const incidents = [...report.incidents.active, ...report.incidents.recent];
  return renderRss({
    title: "Toolgate status: incidents",
    link: `${baseUrl}/status`,
    self: `${baseUrl}/status.rss`,
    description: "Incidents reported by Toolgate's operators, with their updates.",
    items: incidents.flatMap((incident) =>
      incident.updates.map((update, i) => ({
        title: `[${update.status.charAt(0).toUpperCase()}${update.status.slice(1)}] ${incident.title}`,
        link: `${baseUrl}/status#${incident.id}`,
        guid: `${baseUrl}/status#${incident.id}/updates/${i}`,
        date: new Date(update.at),
        description: `<p><strong>${esc(update.status)}</strong> (${esc(update.at)}): ${esc(update.message)}</p>`,
      })),
    ),
  });
}
