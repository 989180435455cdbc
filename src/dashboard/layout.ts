import type { Response } from "express";
import { esc, layout, sendPage } from "../pages/respond.js";
import type { DashboardSession } from "./session.js";

/**
 * The dashboard's page frame: the site layout with the dashboard's own navigation, the session's
 * CSRF token in a meta tag (read by the dashboard script for its requests), and the one local
 * script (`/dashboard/assets/dashboard.js`, allowed by the pages' `script-src 'self'`: no inline
 * script anywhere). Dashboard pages are never cached and never framed.
 */
export const DASHBOARD_SCRIPT_PATH = "/dashboard/assets/dashboard.js";

const DASHBOARD_STYLE = `<style>
.dash-nav{display:flex;gap:1rem;flex-wrap:wrap;align-items:center;flex:1}.dash-nav form{margin:0 0 0 auto;display:flex;gap:.5rem;flex-wrap:wrap}
.dash-nav a[aria-current=page]{font-weight:700;text-decoration:underline}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(12rem,1fr));gap:.75rem;margin:1rem 0}
.card{border:1px solid var(--line);border-radius:8px;padding:.75rem 1rem}.card dt{color:var(--muted);font-size:.85rem}.card dd{margin:0;font-size:1.4rem;font-weight:600}
button,.button{font:inherit;padding:.4rem .8rem;border-radius:6px;border:1px solid var(--accent);background:var(--accent);color:#fff;cursor:pointer}
button.secondary{background:#fff;color:var(--accent)}button.danger{background:var(--bad);border-color:var(--bad)}
button:focus-visible,a:focus-visible,input:focus-visible,select:focus-visible,[tabindex]:focus-visible{outline:3px solid var(--fg);outline-offset:2px;box-shadow:0 0 0 2px #fff}
button[aria-disabled=true]{opacity:.65;cursor:progress}.visually-hidden{position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;border:0}
label{display:block;font-weight:600;margin:.6rem 0 .2rem}input[type=text],input[type=password],input[type=email],input[type=url],select{font:inherit;padding:.4rem .5rem;width:100%;max-width:32rem;border:1px solid #8a93a6;border-radius:6px}
fieldset{border:1px solid var(--line);border-radius:6px;margin:.6rem 0;max-width:32rem}fieldset label{display:inline;font-weight:400;margin:0 .8rem 0 .2rem}
fieldset.stacked label{display:block;font-weight:600;margin:.6rem 0 .2rem}input[type=number],input[type=datetime-local]{font:inherit;padding:.4rem .5rem;width:100%;max-width:32rem;border:1px solid #8a93a6;border-radius:6px;box-sizing:border-box}
.table-wrap{overflow-x:auto}.notice{padding:.6rem .8rem;border-radius:6px;background:var(--code);margin:.8rem 0}.notice.error{color:var(--bad)}
.secret{word-break:break-all;background:var(--code);padding:.5rem;border-radius:6px;display:block;margin:.4rem 0}
.feed{list-style:none;padding:0;margin:0}.feed li{border-bottom:1px solid var(--line);padding:.35rem 0;display:flex;gap:.75rem;flex-wrap:wrap}
.feed .amount{font-weight:600;min-width:4rem}.feed .debit{color:var(--bad)}.feed .credit{color:var(--ok)}
dialog{max-width:min(32rem,calc(100% - 2em));border:1px solid var(--line);border-radius:8px}dialog h2,dialog .target{overflow-wrap:anywhere}dialog::backdrop{background:rgba(0,0,0,.35)}
.warning{color:var(--bad);font-weight:600}.actions{display:flex;gap:.4rem;flex-wrap:wrap}
.table-wrap table.wide-last td:last-child{min-width:14rem}
</style>`;

const NAV_ITEMS = [
  { href: "/dashboard", label: "Overview" },
  { href: "/dashboard/keys", label: "Keys" },
  { href: "/dashboard/webhooks", label: "Webhooks" },
  { href: "/dashboard/analytics", label: "Analytics" },
  { href: "/dashboard/sso", label: "Single sign-on" },
  { href: "/dashboard/plan", label: "Plan and credits" },
];

/**
 * A signed-in page: navigation, sign-out forms (with the CSRF token), the page body and the script.
 * `path` and `scripts` are routes (as mounted); `basePath` (config.basePath) is put before them.
 */
export function dashboardPage(
  current: DashboardSession,
  options: {
    title: string;
    path: string;
    basePath: string;
    body: string;
    /** More for the page's head (its own styles). */
    head?: string;
    /** Local scripts the page needs before the dashboard's own (run in this order, deferred). */
    scripts?: string[];
  },
): string {
  const csrf = esc(current.session.csrfToken);
  const base = options.basePath;
  const links = NAV_ITEMS.map(
    (item) =>
      `<a href="${base}${item.href}"${item.href === options.path ? ' aria-current="page"' : ""}>${item.label}</a>`,
  ).join("");
  const nav = `<nav class="dash-nav" aria-label="Dashboard">${links}
<form method="post" action="${base}/dashboard/sign-out"><input type="hidden" name="_csrf" value="${csrf}"><span class="muted">${esc(current.account.email ?? current.account.id)}</span><button type="submit" class="secondary">Sign out</button></form></nav>`;
  return layout({
    title: `${options.title} — Toolgate dashboard`,
    basePath: base,
    head: `<meta name="csrf-token" content="${csrf}">${DASHBOARD_STYLE}${options.head ?? ""}${[
      ...(options.scripts ?? []),
      DASHBOARD_SCRIPT_PATH,
    ]
      .map((src) => `<script src="${base}${src}" defer></script>`)
      .join("")}`,
    nav,
    // Without the script a button does nothing and a form reloads the page with its fields in
    // the address: the reader is told, where they were left guessing.
    body: `<h1>${esc(options.title)}</h1><div id="notice" role="status" aria-live="polite"></div><noscript><p class="notice">This page's buttons and forms need JavaScript, which is off in this browser; what the page shows needs none.</p></noscript>${options.body}`,
  });
}

/**
 * A page for someone not signed in (sign-in, the e-mailed link's landing page); `head` adds to its
 * head; `basePath`: config.basePath.
 */
export function publicDashboardPage(options: {
  title: string;
  body: string;
  basePath: string;
  head?: string;
}): string {
  return layout({
    title: `${options.title} — Toolgate dashboard`,
    basePath: options.basePath,
    head: `${options.head ?? ""}${DASHBOARD_STYLE}`,
    nav: `<nav aria-label="Site"><a href="${options.basePath}/docs">API reference</a><a href="${options.basePath}/status">Status</a></nav>`,
    body: `<h1>${esc(options.title)}</h1>${options.body}`,
  });
}

/** Dashboard pages carry personal data: `sendPage` sends them `no-store`, with no referrer. */
export function sendDashboardPage(res: Response, html: string, status = 200): void {
  res.status(status);
  sendPage(res, html);
}
