import type { HttpResponse } from "./exchange.js";

/**
 * Headers that several layers of one answer may each contribute values to: versioning's
 * `rel="deprecation"` and `rel="successor-version"` links, a route's `rel="next"`. Setting one of
 * them would drop what an earlier layer put there; RFC 8288 lets one field hold several
 * link-values, comma-separated, so the new ones are added after.
 */
const LIST_HEADERS = new Set(["link"]);

/** Writes a reply's or an error's headers: list headers are added to, every other one replaced. */
export function putHeaders(res: HttpResponse, headers: Record<string, string> | undefined): void {
  for (const name in headers) {
    const value = headers[name]!;
    const earlier = LIST_HEADERS.has(name.toLowerCase()) ? res.getHeader(name) : undefined;
    res.setHeader(name, earlier === undefined ? value : `${String(earlier)}, ${value}`);
  }
}
