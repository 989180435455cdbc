/**
 * Redaction of known secret values (the operator's settings: src/config.ts `secretValues`)
 * wherever they appear in a text, such as a log line or a request path: pino's own redaction
 * covers named fields, not a value inside a message, a URL or a library's error.
 */
export type Redactor = (text: string) => string;

export const NOTHING_TO_REDACT: Redactor = (text) => text;

/**
 * One matcher for every secret, built once: each secret as written, percent-encoded (wholly, or
 * as a client's URL parser encodes a path: `"` and spaces but not `+` or `=`) and each of those
 * JSON-escaped (as it appears inside a log line), longest first so that no secret's tail survives
 * a shorter one's match.
 */
export function secretRedactor(secrets: Iterable<string>): Redactor {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (secret === "") continue;
    forms.add(secret);
    forms.add(encodeURIComponent(secret));
    forms.add(asInPath(secret));
    for (const form of [...forms]) forms.add(JSON.stringify(form).slice(1, -1));
  }
  if (forms.size === 0) return NOTHING_TO_REDACT;
  const pattern = new RegExp(
    [...forms]
      .sort((a, b) => b.length - a.length)
      .map((form) => form.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&"))
      .join("|"),
    "g",
  );
  return (text) => text.replace(pattern, "[redacted]");
}

/** `secret` as the WHATWG URL parser (fetch, browsers) writes it in a path. */
function asInPath(secret: string): string {
  try {
    return new URL(`http://host/${secret}`).pathname.slice(1);
  } catch {
    return secret;
  }
}
