/**
 * JSON Schema's `format: "url"`, checked in linear time. ajv-formats' `url` is one regular
 * expression whose user:password@ part (`\S+(?::\S*)?@`) and host can split a string many ways, so
 * a crafted string backtracks polynomially: 300,000 characters held the gateway's event loop 15 s
 * while it validated a custom tool's input. This accepts exactly the strings that expression
 * accepts (the tests compare the two), deciding each way of splitting off a user:password@ in one
 * pass: a host stops at the next `@`, so the hosts tried never overlap.
 *
 * The expression, for reference: `^(?:https?|ftp)://(?:\S+(?::\S*)?@)?(?:PUBLIC-IPV4|DOMAIN)
 * (?::\d{2,5})?(?:/\S*)?$`, case-insensitive, in Unicode mode (so `\S` is Unicode's).
 */

// Bounded (anchored, fixed alternatives): linear. The same flags as the expression: under `iu`,
// `s` also matches U+017F, as it did there.
const SCHEME = /^(?:https?|ftp):\/\//iu;
const WHITESPACE = /\s/u;
const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/** `[a-z0-9\u{00a1}-\u{ffff}]` under `iu`: ASCII letters and digits, and every BMP code point from ¡ on. */
const isHostChar = (code: number) =>
  (code >= 0x30 && code <= 0x39) ||
  (code >= 0x41 && code <= 0x5a) ||
  (code >= 0x61 && code <= 0x7a) ||
  (code >= 0xa1 && code <= 0xffff);

const isDigit = (code: number) => code >= 0x30 && code <= 0x39;

/** The expression's IPv4 branch: 1-223 first, no private range (10, 127, 169.254, 192.168, 172.16-31). */
function isPublicIpv4(host: string): boolean {
  const octets = IPV4.exec(host)?.slice(1);
  if (!octets) return false;
  const [first, second, third, last] = octets as [string, string, string, string];
  const noLeadingZero = (octet: string) => octet.length === 1 || octet[0] !== "0";
  // Middle octets are `1?\d{1,2}|2[0-4]\d|25[0-5]`: any one or two digits, three only from 100 to 255.
  const middle = (octet: string) => octet.length < 3 || (octet[0] !== "0" && Number(octet) <= 255);
  if (!noLeadingZero(first) || Number(first) < 1 || Number(first) > 223) return false;
  if (!middle(second) || !middle(third)) return false;
  if (!noLeadingZero(last) || Number(last) < 1 || Number(last) > 254) return false;
  if (first === "10" || first === "127") return false;
  if ((first === "169" && second === "254") || (first === "192" && second === "168")) return false;
  return !(first === "172" && /^(?:1[6-9]|2\d|3[01])$/.test(second));
}

/**
 * The expression's domain branch: labels of host characters joined by single hyphens, separated
 * by dots, ending in a top-level label of at least two letters (no digits or hyphens).
 */
function isDomain(host: string): boolean {
  const labels = host.split(".");
  if (labels.length < 2) return false;
  const top = labels.pop()!;
  if (top.length < 2) return false;
  for (let i = 0; i < top.length; i++) {
    const code = top.charCodeAt(i);
    if (isDigit(code) || code === 0x2d) return false;
  }
  return labels.every(
    (label) =>
      label.length > 0 && !label.startsWith("-") && !label.endsWith("-") && !label.includes("--"),
  );
}

/** Whether `text` is a URL as ajv-formats' full `url` format says, in time linear in its length. */
export function isUrl(text: string): boolean {
  const scheme = SCHEME.exec(text);
  if (!scheme) return false;
  const start = scheme[0].length;
  let firstSpace = text.length;
  for (let i = start; i < text.length; i++)
    if (WHITESPACE.test(text[i]!)) {
      firstSpace = i;
      break;
    }
  let lastSpace = -1;
  for (let i = text.length - 1; i >= start; i--)
    if (WHITESPACE.test(text[i]!)) {
      lastSpace = i;
      break;
    }

  /** Whether host, port and path start at `from` and run to the end. */
  const restIsHostPortPath = (from: number): boolean => {
    let end = from;
    // A host is host characters, dots and hyphens; an astral code point (a surrogate pair) is none.
    while (end < text.length) {
      const code = text.codePointAt(end)!;
      if (code > 0xffff || !(isHostChar(code) || code === 0x2e || code === 0x2d)) break;
      end++;
    }
    const host = text.slice(from, end);
    if (!isPublicIpv4(host) && !isDomain(host)) return false;
    let at = end;
    if (text[at] === ":") {
      let digits = 0;
      while (digits < 6 && isDigit(text.charCodeAt(at + 1 + digits))) digits++;
      if (digits < 2 || digits > 5) return false;
      at += 1 + digits;
    }
    if (at === text.length) return true;
    // The path: `/` and anything without white space to the end.
    return text[at] === "/" && lastSpace < at;
  };

  if (restIsHostPortPath(start)) return true;
  // Or after a user:password@: any non-empty text without white space, up to any `@`.
  for (let at = text.indexOf("@", start + 1); at !== -1 && at <= firstSpace; ) {
    if (restIsHostPortPath(at + 1)) return true;
    at = text.indexOf("@", at + 1);
  }
  return false;
}

/** The `url` format for Ajv's addFormat, in place of ajv-formats' backtracking expression. */
export const urlFormat = { type: "string", validate: isUrl } as const;
