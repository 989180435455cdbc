import type { Response } from "express";

/**
 * How every HTML page is sent, and the header every response carries against content sniffing (set by src/http/request-context.ts).
 * A page is sent with `sendHtml`, never `res.send(html)`: it sets the type, `nosniff`, and a
 * Content-Security-Policy that allows no script, no framing (`frame-ancestors 'none'`, against
 * clickjacking) and nothing from elsewhere. A page that needs more passes its own `csp`, and keeps
 * `frame-ancestors 'none'` (`pageCsp` adds it).
 */
export const DEFAULT_PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'self'";

/**
 * What a document that is not a page carries (plain text, RSS, JSON such as /openapi.json, a
 * script): nothing may run or load if a browser opens it, and no site may frame it.
 */
export const DOCUMENTS_CSP = "default-src 'none'; frame-ancestors 'none'";

/** The headers of a public JSON document of the API (/openapi.json, /.well-known/x402). */
export const PUBLIC_DOCUMENT_HEADERS = {
  "Cache-Control": "public, max-age=300",
  "Content-Security-Policy": DOCUMENTS_CSP,
};

/** A page's policy, always with framing refused. */
export const pageCsp = (policy: string) => `${policy}; frame-ancestors 'none'`;

export function sendHtml(
  res: Response,
  html: string,
  options: { csp?: string; cacheSeconds?: number } = {},
): void {
  res.setHeader("Content-Security-Policy", pageCsp(options.csp ?? DEFAULT_PAGE_CSP));
  res.setHeader("X-Content-Type-Options", "nosniff");
  if (options.cacheSeconds !== undefined)
    res.setHeader("Cache-Control", `public, max-age=${options.cacheSeconds}`);
  res.type("html").send(html);
}
