import { isUtf8 } from "node:buffer";
import express, { type RequestHandler } from "express";
import type { ErrorCode } from "./errors.js";
import { continueOrRefuse } from "./expect-continue.js";

/**
 * The JSON body parser every route shares, with the two bounds a body must respect before it is
 * parsed: its size (`BODY_LIMIT_BYTES`, 413 `body_too_large`) and how deeply its arrays and
 * objects nest (`BODY_MAX_DEPTH`, 413 `body_too_deep`). Depth is bounded at the door because
 * much of what handles a value later walks it recursively (JSON.stringify, schema validators,
 * loggers): a 10 KB body of 5,000 nested arrays overflows the stack in any of them.
 *
 * The depth is measured on the raw bytes, before JSON.parse, in one pass without recursion that
 * stops at the first level too deep (a megabyte of "[" is refused after 65 bytes, unparsed), and
 * skips strings with a native search (~0.03 ms for a 1 MB string). JSON is UTF-8 (RFC 8259
 * §8.1), where the bytes of `[ ] { } " \` never occur inside a multi-byte character, so the scan
 * is exact; other charsets are refused (415) rather than scanned differently ("utf8" is UTF-8).
 * A string the body escapes into a lone surrogate (`"\ud800"`) is refused too (422
 * `validation_failed` naming the field): valid UTF-8 bytes, but no Unicode text (`loneSurrogateIn`).
 */
/** What a body that cannot be read is answered (http/errors.ts maps the parser's errors to these). */
export const UNREADABLE_BODY: readonly ErrorCode[] = [
  "invalid_json",
  "invalid_content_encoding",
  "body_too_large",
  "body_too_deep",
  "unsupported_media_type",
];

export function jsonBody(options: { limitBytes: number; maxDepth: number }): RequestHandler {
  const parse = express.json({
    limit: options.limitBytes,
    strict: false,
    verify(req, _res, body, charset) {
      // Declared UTF-8 and really UTF-8: bytes that are not would be read as U+FFFD and the
      // call served on text the caller never sent (a native check, ~GB/s).
      if (charset !== "utf-8" || !isUtf8(body))
        throw Object.assign(new Error("JSON bodies must be UTF-8."), {
          status: 415,
          type: "charset.unsupported",
        });
      if (jsonDepthExceeds(body, options.maxDepth)) {
        throw Object.assign(
          new Error(
            `The request body nests arrays and objects deeper than ${options.maxDepth} levels.`,
          ),
          { status: 413, type: "entity.too.deep" },
        );
      }
      // Only a `\u` escape can make a string that is not Unicode out of UTF-8 bytes: the parsed
      // value is checked for one only then (a native search; most bodies have none).
      if (body.includes(ESCAPE)) (req as Escaped)[HAS_ESCAPES] = true;
    },
  });
  return (req, res, next) => {
    const unasked = continueOrRefuse(req, res, options.limitBytes);
    if (unasked) return next(unasked);
    // body-parser refuses, before `verify`, every charset that does not begin "utf-" (415): the
    // common spelling "utf8" is UTF-8 too, and is read as such (the header is put back after).
    const type = req.headers["content-type"];
    const undashed = type !== undefined && type !== "application/json" && UTF8_UNDASHED.test(type);
    if (undashed) req.headers["content-type"] = type.replace(UTF8_UNDASHED, "$1utf-8$2");
    parse(req, res, (err?: unknown) => {
      if (undashed) req.headers["content-type"] = type;
      if (err || !(req as Escaped)[HAS_ESCAPES]) return next(err);
      const lone = loneSurrogateIn(req.body, options.maxDepth);
      if (lone === null) return next();
      const hex = lone.unit.toString(16);
      next(
        Object.assign(
          new Error(
            `Invalid body${lone.param ? ` field "${lone.param}"` : ""}: not Unicode text, it escapes a lone surrogate (\\u${hex}); escape a character outside the BMP as a surrogate pair.`,
          ),
          { status: 422, type: NOT_UNICODE, param: lone.param },
        ),
      );
    });
  };
}

/** The `type` of the error a lone surrogate is refused with (http/errors.ts: 422 `validation_failed`). */
export const NOT_UNICODE = "entity.not.unicode";

/** `charset=utf8` in any case, unquoted or quoted, as the last parameter or not. */
const UTF8_UNDASHED = /(;\s*charset\s*=\s*"?)utf8("?\s*(?:;|$))/i;
const ESCAPE = "\\u";
const HAS_ESCAPES = Symbol("json body has \\u escapes");
type Escaped = { [HAS_ESCAPES]?: true };

const isWellFormed = (text: string) =>
  (text as string & { isWellFormed(): boolean }).isWellFormed();

/**
 * The first lone surrogate (U+D800–U+DFFF outside a valid pair) in a parsed JSON value's strings
 * and keys, with where it is (`param`, a dotted path as validation errors name fields), or null.
 * JSON.parse turns the escape `\ud800` into that code unit as it stands (RFC 8259 §8.2 leaves
 * such strings' meaning undefined; I-JSON, RFC 7493 §2.1, forbids them), and anything reading it
 * as text later sees U+FFFD, which the caller never sent. `depth` bounds the walk as the body's
 * nesting was bounded.
 */
export function loneSurrogateIn(
  value: unknown,
  depth: number,
  path = "",
): { unit: number; param: string } | null {
  const at = (key: string | number) => (path ? `${path}.${key}` : String(key));
  if (typeof value === "string") {
    const unit = loneSurrogateUnit(value);
    return unit === null ? null : { unit, param: path };
  }
  if (typeof value !== "object" || value === null || depth < 0) return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const lone = loneSurrogateIn(value[i], depth - 1, at(i));
      if (lone !== null) return lone;
    }
    return null;
  }
  for (const key in value) {
    const unit = loneSurrogateUnit(key);
    if (unit !== null) return { unit, param: at(key) };
    const lone = loneSurrogateIn((value as Record<string, unknown>)[key], depth - 1, at(key));
    if (lone !== null) return lone;
  }
  return null;
}

function loneSurrogateUnit(text: string): number | null {
  if (isWellFormed(text)) return null;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0xd800 || unit > 0xdfff) continue;
    const next = text.charCodeAt(i + 1);
    if (unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) i++;
    else return unit;
  }
  return null;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const OPEN_OBJECT = 0x7b;
const CLOSE_ARRAY = 0x5d;
const CLOSE_OBJECT = 0x7d;

/** Whether the JSON text in `bytes` opens more than `max` arrays/objects inside each other (strings skipped). */
export function jsonDepthExceeds(bytes: Uint8Array, max: number): boolean {
  let depth = 0;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    if (byte === QUOTE) {
      i = closingQuote(bytes, i);
      if (i === -1) return false; // unterminated: the parser refuses it
    } else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      if (++depth > max) return true;
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) depth--;
  }
  return false;
}

/** The index of the quote closing the string opened at `open`: the next one not escaped (natively searched: strings are most of a large body). */
function closingQuote(bytes: Uint8Array, open: number): number {
  for (let at = open; ; ) {
    at = bytes.indexOf(QUOTE, at + 1);
    if (at === -1) return -1;
    let backslashes = 0;
    while (bytes[at - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
}
