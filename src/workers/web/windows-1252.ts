/**
 * windows-1252's bytes 0x80-0x9F, per the WHATWG index (https://encoding.spec.whatwg.org/index-windows-1252.txt):
 * "€", "‚", "ƒ", "„", "…", curly quotes, "•", "–", "—", "™" and the rest. The five bytes the index
 * leaves as they are (0x81, 0x8D, 0x8F, 0x90, 0x9D) stay U+0081, U+008D, U+008F, U+0090, U+009D.
 *
 * Node since 20.18.3/22.13.0 decodes windows-1252 (and so Latin-1, ISO-8859-1 and US-ASCII, which
 * WHATWG maps to it) as Latin-1: those bytes come out as the C1 control characters U+0080-U+009F
 * (nodejs/node#60888). Its decoding of every other byte is right, so the text is mended after it.
 */
const C1 =
  "\u20AC\u0081\u201A\u0192\u201E\u2026\u2020\u2021\u02C6\u2030\u0160\u2039\u0152\u008D\u017D\u008F" +
  "\u0090\u2018\u2019\u201C\u201D\u2022\u2013\u2014\u02DC\u2122\u0161\u203A\u0153\u009D\u017E\u0178";

const CONTROL = /[\u0080-\u009F]/;
const CONTROLS = /[\u0080-\u009F]/g;

/**
 * Text decoded as windows-1252, with 0x80-0x9F as the WHATWG index has them. A text decoded as
 * windows-1252 has a C1 control character only where the page had one of those bytes (the
 * index's own five map to themselves), so this is right whether or not the decoder was: a text
 * without them is returned as it is, after one scan.
 */
export function mendWindows1252(text: string): string {
  if (!CONTROL.test(text)) return text;
  return text.replace(CONTROLS, (c) => C1[c.charCodeAt(0) - 0x80]!);
}
