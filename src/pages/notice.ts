import type { Request } from "express";
import { esc, layout } from "./respond.js";

/**
 * The pages a person lands on from an e-mailed link. A browser asks for HTML first and gets a
 * page; a client that asks for JSON (`Accept: application/json`, or `*\/*` as curl sends) keeps
 * getting the JSON answer.
 */
export const wantsHtml = (req: Request): boolean =>
  req.accepts(["application/json", "text/html"]) === "text/html";

export function renderNotice(options: {
  title: string;
  message: string;
  ok: boolean;
  /** config.basePath; `next.href` is a path under it. */
  basePath: string;
  next?: { href: string; label: string };
}): string {
  return layout({
    title: `${options.title} — Toolgate`,
    basePath: options.basePath,
    body: `<h1>${options.ok ? "✓ " : ""}${esc(options.title)}</h1><p class="${options.ok ? "operational" : "down"}">${esc(options.message)}</p>${options.next ? `<p><a href="${esc(options.basePath + options.next.href)}">${esc(options.next.label)}</a></p>` : ""}`,
  });
}
