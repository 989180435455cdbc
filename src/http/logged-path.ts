import { clip } from "../lib/readable-text.js";
import { percentDecodedLeniently, type Redactor } from "../lib/redact.js";

/**
 * The path of a request as the logs write it. Without its query string (it can hold tokens), and
 * with any Toolgate key in it cut to its kind (`tg_live_[redacted]`): a caller can put a key in a
 * path, by mistake or not (`GET /v1/tools/<key>`), and pino's redaction covers fields, not values.
 * Every request's log line goes through here, so the pattern runs only when "tg_" is there at all.
 */
const KEY_SHAPED = /(tg_[a-z]+_)[0-9A-Za-z_]+/g; // tg_live_<account>_<secret>, tg_admin_<hex> (accounts/api-keys.ts, development.ts)

export function loggedPath(url: string): string {
  const query = url.indexOf("?");
  const path = query === -1 ? url : url.slice(0, query);
  return withoutKeys(path);
}

const withoutKeys = (path: string) =>
  path.indexOf("tg_") === -1 ? path : path.replace(KEY_SHAPED, "$1[redacted]");

/**
 * A request's path (as `loggedPath` gives it) with the configured secrets cut out, however a
 * client percent-encoded them: the redactor knows the forms encoders write, but a client may
 * escape any character (`adminkey%2DSECRET` for `adminkey-SECRET`, `tg%5Flive%5F…` for a key).
 * So the path is also decoded and redacted again; when that finds a secret, the decoded form is
 * what is written (the encoded one would still hold it).
 */
export function redactedPath(path: string, redactSecrets: Redactor): string {
  const redacted = redactSecrets(path);
  const decoded = percentDecodedLeniently(redacted);
  if (decoded === redacted) return redacted;
  const decodedRedacted = redactSecrets(withoutKeys(decoded));
  return decodedRedacted === decoded ? redacted : decodedRedacted;
}

/**
 * The path of a request (its URL as received) as every log line that names it writes it: the
 * request log, the 5xx warning, the "request failed" error and the request guard's
 * uncaught-exception line. Without its query string nor any key (`loggedPath`), and without a
 * configured secret or key however a client percent-encoded it (`redactedPath`).
 */
export function pathForLog(url: string, redactSecrets: Redactor): string {
  return redactedPath(loggedPath(url), redactSecrets);
}

/** How much of a request's path an error message repeats: enough to spot a typo, never kilobytes. */
const SHOWN_PATH_CHARS = 200;

/**
 * The path of a request as an error message repeats it to the caller (and so to the logs that
 * keep the message): as the logs write it (`pathForLog`), then its first SHOWN_PATH_CHARS
 * characters. Cut after the redaction, so no secret's head survives the cut.
 */
export function shownPath(url: string, redactSecrets: Redactor): string {
  const path = pathForLog(url, redactSecrets);
  return clip(path, SHOWN_PATH_CHARS);
}
