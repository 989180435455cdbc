/**
 * What the client refuses before sending anything (`invalid_argument`, status 0), the Python
 * library's rules too (sdk/python/src/toolgate/_checks.py): a key or header that cannot be sent
 * as an HTTP header, an Idempotency-Key the gateway would not take, a base URL that is not an
 * http(s) URL or holds white space, a user name or password, a query or fragment, a timeout no
 * timer can keep.
 * Messages never hold an API key or a password.
 */
import { ToolgateError } from "./errors.js";

export const invalid = (message: string, param?: string) =>
  new ToolgateError({ status: 0, code: "invalid_argument", message, param });

/**
 * The gateway's rule for an Idempotency-Key (src/http/idempotency-key.ts): 1 to 255 printable
 * ASCII characters. An empty one is refused rather than left out: a call whose key was dropped
 * would still be retried, and a retry without a key is run and charged again.
 */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

export function checkIdempotencyKey(key: string | undefined, name = "idempotencyKey"): void {
  if (key === undefined) return;
  if (typeof key !== "string" || !IDEMPOTENCY_KEY.test(key))
    throw invalid(
      `${name} must be 1 to 255 printable ASCII characters, no spaces (got ${key === "" ? "an empty string" : JSON.stringify(String(key).slice(0, 80))}); leave it out to have one made for the call.`,
      name,
    );
}

/** Whitespace a header value may carry around it (a key read from a file ends with a newline). */
const SURROUNDING_WHITESPACE = /^[ \t\r\n]+|[ \t\r\n]+$/g;
export const trimHeaderValue = (value: string) => value.replace(SURROUNDING_WHITESPACE, "");

/**
 * The API key as sent: surrounding spaces, tabs and line breaks removed (fetch would drop them
 * anyway; Python's HTTP library refuses them), empty meaning none; any other character that is not
 * printable ASCII is refused, naming its position but never the key.
 */
export function normaliseApiKey(key: string | undefined, name: string): string | undefined {
  if (key === undefined || key === null) return undefined;
  if (typeof key !== "string") throw invalid(`${name} must be a string.`, name);
  const trimmed = trimHeaderValue(key);
  const bad = trimmed.search(/[^\x21-\x7e]/);
  if (bad !== -1)
    throw invalid(
      `${name} cannot be sent as the x-api-key header: its character at position ${bad + 1} of ${trimmed.length} is not printable ASCII (the key is not shown here). Check how it was copied or read.`,
      name,
    );
  return trimmed || undefined;
}

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * The `headers` option, names lower-cased (so `User-Agent` replaces the default one rather than
 * adding a second) and values trimmed; a name or value HTTP does not allow is refused, naming the
 * header but not its value (it may be a secret).
 */
export function normaliseHeaders(
  headers: Record<string, string> | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!HEADER_NAME.test(name))
      throw invalid(`headers: ${JSON.stringify(name)} is not a valid HTTP header name.`, "headers");
    if (typeof value !== "string" || /[^\t\x20-\x7e]/.test(trimHeaderValue(value)))
      throw invalid(
        `headers: the value of ${name} cannot be sent in a header (only printable ASCII; the value is not shown here).`,
        "headers",
      );
    out[name.toLowerCase()] = trimHeaderValue(value);
  }
  return out;
}

/** setTimeout's limit (2^31 - 1 ms, about 24.8 days): above it, Node fires after 1 ms. */
export const MAX_TIMEOUT_MS = 2_147_483_647;

export function checkTimeoutMs(value: number | undefined, name = "timeoutMs"): void {
  if (value === undefined) return;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0 || value > MAX_TIMEOUT_MS)
    throw invalid(
      `${name} must be a number of milliseconds above 0 and at most ${MAX_TIMEOUT_MS} (about 24.8 days), got ${String(value)}.`,
      name,
    );
}

/**
 * A URL for a message, with whatever stands before its last "@" in place of a user name and
 * password (`http://***@host/`): an invalid URL's parts cannot be told apart safely.
 */
export function redactUrl(text: string): string {
  const at = text.lastIndexOf("@");
  if (at === -1) return text;
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(text)?.[0].length ?? 0;
  return `${text.slice(0, Math.min(scheme, at))}***${text.slice(at)}`;
}

/**
 * White space and control characters, none of which a base URL holds but by a slip (a pasted line
 * break, a space in a path). The parsers differ on them (fetch's URL drops a tab or line break and
 * encodes a space; Python's urlsplit drops the first, and httpx then refuses the URL it was given),
 * so one inside the URL is refused rather than repaired either way.
 */
const NOT_IN_A_BASE_URL =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing them is the point
  /[\x00-\x20\x7f-\x9f\u00a0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff]/;

/** The library's advice on a base URL with a password, which the CLI (no fetch to give) leaves out. */
export const PROXY_ADVICE = "; put a proxy's credentials in your fetch instead";

/**
 * The base URL requests are sent to, checked once when the client is made (the CLI's --base-url
 * too), as the Python library's (sdk/python/src/toolgate/_checks.py normalise_base_url): surrounding
 * spaces, tabs and line breaks removed, as from an API key (a value read from an env file ends with
 * a newline); refused unless it is `http(s)://` and a host, with no white space or control
 * character inside, no user name or password (fetch refuses every request to one), and no query
 * or fragment.
 */
export function normaliseBaseUrl(text: string, name: string): string {
  const trimmed = trimHeaderValue(String(text));
  const got = JSON.stringify(redactUrl(trimmed));
  let url: URL | undefined;
  try {
    url = new URL(trimmed); // not URL.canParse: older browsers and runtimes lack it
  } catch {}
  // "http:host" parses in fetch's URL but not in Python's: the slashes are required of both.
  if (!url || !/^https?:\/\//i.test(trimmed))
    throw invalid(
      `${name} must be an http(s) URL such as https://toolgate.example (got ${got}).`,
      name,
    );
  const bad = trimmed.search(NOT_IN_A_BASE_URL);
  if (bad !== -1)
    throw invalid(
      `${name} must not hold white space or control characters (got ${got}, one at position ${bad + 1}); write a space in a path as %20.`,
      name,
    );
  if (url.username || url.password)
    throw invalid(
      `${name} must not hold a user name or password (got ${got}): the gateway takes an API key${PROXY_ADVICE}.`,
      name,
    );
  // Each request's path is joined onto the base URL, which dropped the path before a query or
  // fragment here (`http://h/gw?x=1` sent to http://h/api/…) and kept it in Python's, path after
  // (http://h/gw?x=1/api/…): either way, with the API key, outside the gateway at /gw.
  if (/[?#]/.test(trimmed))
    throw invalid(
      `${name} must not hold a query (?…) or fragment (#…) (got ${got}): give the gateway's address alone, such as https://toolgate.example/gw.`,
      name,
    );
  return trimmed;
}
