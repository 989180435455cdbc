/**
 * Redaction of known secret values (the operator's settings: src/config.ts `secretValues`)
 * wherever they appear in a text, such as a log line or a request path: pino's own redaction
 * covers named fields, not a value inside a message, a URL or a library's error.
 */
export type Redactor = (text: string) => string;

export const NOTHING_TO_REDACT: Redactor = (text) => text;

/**
 * A secret to cut out of texts: a value, matched wherever it appears; or the password of a URL
 * setting (as the URL holds it: percent-encoded), matched only where it sits in a URL, between
 * `:` and `@`, since it may be short and a short value alone would cut ordinary words out of
 * texts (docs/decisions.md, "Configured secrets are cut out by value").
 */
export type Secret = string | { readonly urlPassword: string };

/**
 * A way a secret is written: literal text, and percent-escapes (`%2B`) whose hex digits a
 * client or library may write in either case (`%2b`): only those are matched without regard to
 * case, never the secret's own text.
 */
type Piece = { text: string } | { escape: string };
type Form = Piece[];

/**
 * One matcher for every secret, built once: each secret as written, percent-encoded (wholly, or
 * as a URL parser encodes a path: `"` and spaces but not `+` or `=`) and each of those
 * JSON-escaped (as it appears inside a log line), longest first so that no secret's tail survives
 * a shorter one's match. A URL password's forms are those it can take inside a URL: as the
 * setting wrote it, decoded, and encoded as a URL parser or `encodeURIComponent` writes it.
 */
export function secretRedactor(secrets: Iterable<Secret>): Redactor {
  const forms: Form[] = [];
  for (const secret of secrets) {
    if (typeof secret === "string") {
      if (secret !== "") forms.push(literal(secret), componentEncoded(secret), pathEncoded(secret));
      continue;
    }
    if (secret.urlPassword === "") continue;
    const decoded = percentDecoded(secret.urlPassword);
    const inUrl = [
      escapesOf(secret.urlPassword),
      literal(decoded),
      componentEncoded(decoded),
      userinfoEncoded(decoded),
    ].map((form) => [{ text: ":" }, ...form, { text: "@" }]);
    // Not the whole `:password@` encoded (`%3A…%40`, a URL inside another URL's query string):
    // each such form costs the request log's path scan more than all the others together.
    forms.push(...inUrl);
  }
  // Each `[source, length]`, deduplicated by source.
  const alternatives = new Map<string, number>();
  for (const form of forms.flatMap((form) => [form, jsonEscaped(form)])) {
    const length = form.reduce((sum, p) => sum + ("text" in p ? p.text : p.escape).length, 0);
    if (length > 0) alternatives.set(form.map(patternOf).join(""), length);
  }
  if (alternatives.size === 0) return NOTHING_TO_REDACT;
  const pattern = new RegExp(
    [...alternatives]
      .sort((a, b) => b[1] - a[1])
      .map(([source]) => source)
      .join("|"),
    "g",
  );
  return (text) => text.replace(pattern, "[redacted]");
}

function patternOf(piece: Piece): string {
  if ("text" in piece) return piece.text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  // `%2B` → `%2[bB]`: digits as they are, letters either case.
  return piece.escape.replace(/[A-Fa-f]/g, (h) => `[${h.toLowerCase()}${h.toUpperCase()}]`);
}

const literal = (text: string): Form => [{ text }];

/** A form whose text is JSON-escaped, as it appears inside a log line; escapes need none. */
const jsonEscaped = (form: Form): Form =>
  form.map((p) => ("text" in p ? { text: JSON.stringify(p.text).slice(1, -1) } : p));

/** Each character through `encode`: where it comes back changed, it is percent-escapes. */
function encodedBy(secret: string, encode: (char: string) => string): Form {
  const form: Form = [];
  for (const char of secret) {
    let encoded: string;
    try {
      encoded = encode(char);
    } catch {
      encoded = char; // a lone surrogate: no encoder writes it, so neither does a client
    }
    if (encoded === char) form.push({ text: char });
    else form.push(...escapesOf(encoded));
  }
  return form;
}

/** A text that holds percent-escapes (an encoded value), split into its text and its escapes. */
function escapesOf(encoded: string): Form {
  return encoded
    .split(/(%[0-9A-Fa-f]{2})/)
    .filter((part) => part !== "")
    .map((part) => (/^%[0-9A-Fa-f]{2}$/.test(part) ? { escape: part } : { text: part }));
}

const componentEncoded = (secret: string) => encodedBy(secret, encodeURIComponent);

/**
 * As the WHATWG URL parser (fetch, browsers) writes a character in a path; `?` and `#`, which
 * would end the path, as `encodeURIComponent` does (how a client puts them in a path at all).
 */
const pathEncoded = (secret: string) =>
  encodedBy(secret, (char) =>
    char === "?" || char === "#"
      ? encodeURIComponent(char)
      : new URL(`http://host/x${char}`).pathname.slice(2),
  );

/** As the WHATWG URL parser writes a character in a URL's password. */
const userinfoEncoded = (secret: string) =>
  encodedBy(secret, (char) => {
    const url = new URL("http://host/");
    url.password = char;
    return url.password;
  });

/** A percent-encoded text decoded; as it is when it does not decode (a stray `%`). */
export function percentDecoded(encoded: string): string {
  try {
    return decodeURIComponent(encoded);
  } catch {
    return encoded;
  }
}

/**
 * A text with every run of percent-escapes decoded as UTF-8; never throws: bytes that are not
 * UTF-8 become U+FFFD, and a stray `%` stays as it is (a path a client sent may hold either).
 */
export function percentDecodedLeniently(text: string): string {
  if (!text.includes("%")) return text;
  return text.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) =>
    Buffer.from(run.replace(/%/g, ""), "hex").toString("utf8"),
  );
}
