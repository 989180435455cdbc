import type { Response } from "express";
import { DOCUMENTS_CSP, sendHtml } from "../http/html.js";

/**
 * How every public page is sent, and their shared layout. The security headers (nosniff, a CSP
 * with `frame-ancestors 'none'`) are the project's `sendHtml`; the pages' policy adds only
 * same-origin scripts and fetches (the docs' Try it form). The pages are built from data the
 * gateway already holds; none loads a script or a style from elsewhere, so they work offline.
 */
export const PAGES_CSP =
  "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'";

const cacheControl = (cacheSeconds: number) =>
  cacheSeconds > 0 ? `public, max-age=${cacheSeconds}` : "no-store";

export function sendPage(res: Response, html: string, cacheSeconds = 0): void {
  res.setHeader("Referrer-Policy", "no-referrer");
  res.setHeader("Cache-Control", cacheControl(cacheSeconds));
  sendHtml(res, html, { csp: PAGES_CSP });
}

/** Plain text, RSS, JSON or the Try it script (every answer carries nosniff already), with DOCUMENTS_CSP. */
export function sendDocument(res: Response, type: string, body: string, cacheSeconds = 0): void {
  res.setHeader("Cache-Control", cacheControl(cacheSeconds));
  res.setHeader("Content-Security-Policy", DOCUMENTS_CSP);
  res.type(type).send(body);
}

export const esc = (s: unknown): string =>
  String(s ?? "")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");

const STYLE = `
:root{--fg:#1d2330;--muted:#5b6475;--line:#e2e6ee;--bg:#fff;--code:#f4f6fa;--accent:#2456c7;--ok:#1a7f37;--warn:#9a5c00;--bad:#c62828}
*{box-sizing:border-box}body{font:15px/1.55 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg);margin:0}
header.site{border-bottom:1px solid var(--line);padding:.6rem 1.25rem;display:flex;gap:1.25rem;align-items:center;flex-wrap:wrap}
header.site a{color:var(--fg);text-decoration:none}header.site a.brand{font-weight:700}header.site nav{display:flex;flex-wrap:wrap;gap:.25rem 1rem}
main{max-width:64rem;margin:0 auto;padding:1.25rem}
a{color:var(--accent)}h1{font-size:1.7rem;margin:.5rem 0}h2{margin-top:2.2rem;border-bottom:1px solid var(--line);padding-bottom:.3rem}
h3{margin:1.6rem 0 .4rem}h4{margin:1rem 0 .3rem;font-size:.95rem;color:var(--muted)}
pre{background:var(--code);padding:.7rem .9rem;overflow:auto;font-size:13px;border-radius:6px;line-height:1.45}
code{font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}p code,li code,td code{background:var(--code);padding:.05rem .3rem;border-radius:4px}
input{max-width:100%}.table-scroll{overflow-x:auto;margin:.5rem 0}.table-scroll>table{margin:0}.table-scroll:focus-visible{outline:3px solid var(--fg);outline-offset:2px}
table{border-collapse:collapse;width:100%;margin:.5rem 0}td{overflow-wrap:anywhere}th,td{border-bottom:1px solid var(--line);padding:.35rem .5rem;text-align:left;vertical-align:top}
.muted{color:var(--muted)}.pill{display:inline-block;padding:0 .5rem;border-radius:1rem;font-size:.8rem;font-weight:600;border:1px solid currentColor}
.operational{color:var(--ok)}.degraded{color:var(--warn)}.down,.major{color:var(--bad)}.unknown,.not_configured{color:var(--muted)}
.method{font-weight:700;text-transform:uppercase}.get{color:#1a7f37}.post{color:#2456c7}.put{color:#8250df}.delete{color:#c62828}
`;

const siteNav = (basePath: string) =>
  `<nav aria-label="Site"><a href="${basePath}/docs">API reference</a><a href="${basePath}/changelog">Changelog</a><a href="${basePath}/status">Status</a><a href="${basePath}/openapi.json">OpenAPI</a><a href="${basePath}/llms.txt">llms.txt</a><a href="${basePath}/dashboard">Dashboard</a></nav>`;

/**
 * The page frame shared by /docs, /changelog, /status and the dashboard (which brings its own `nav`).
 * `basePath` (config.basePath) starts every address the pages hand the browser; the frame also
 * carries it in a meta tag, for the scripts that build their own requests.
 */
export function layout(options: {
  title: string;
  body: string;
  basePath: string;
  head?: string;
  wide?: boolean;
  nav?: string;
}): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(options.title)}</title><link rel="icon" href="data:,"><meta name="base-path" content="${esc(options.basePath)}">
<style>${STYLE}${options.wide ? "main{max-width:80rem}" : ""}</style>
${options.head ?? ""}</head>
<body><header class="site"><a class="brand" href="${options.basePath}/docs">Toolgate</a>${options.nav ?? siteNav(options.basePath)}</header>
<main>${options.body}</main></body></html>`;
}
