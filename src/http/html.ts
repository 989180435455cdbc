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
