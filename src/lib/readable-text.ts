import { z } from "zod";

/**
 * The rules for short text a person writes once and others read, shown in pages, feeds, tables,
 * terminals and logs (key names, incident titles and messages): no control characters, no
 * invisible reordering, no noncharacters. A NUL, an ESC starting a terminal escape sequence or a
 * BEL was stored and shown as it came; a right-to-left override (U+202E) showed "gnp.exe" as
 * "exe.png", and the key's prefix after it reversed too.
 *
 * Refused: control characters (Unicode's Cc: C0, DEL, C1); the bidirectional embeddings,
 * overrides and isolates (U+202A–U+202E, U+2066–U+2069, the "Trojan Source" set); and the
 * invisible ones that make a name look empty or like another (zero width space U+200B, word joiner
 * and invisible operators U+2060–U+2064, U+FEFF). Not the zero width joiner and non-joiner or the
 * direction marks (U+200C–U+200F): emoji sequences and several scripts need them, and they reorder
 * nothing. Written as a class with no \p{…}, so the OpenAPI document's pattern reads the same in
 * JavaScript and Python (whose re has no \p).
 */
export const NO_CONTROL_CHARACTERS =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing them is the point
  /^[^\x00-\x1F\x7F-\x9F\u200B\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]*$/;

/** `NO_CONTROL_CHARACTERS` but for tab and line feed: for text of several lines or columns. */
export const NO_CONTROL_CHARACTERS_BUT_LINES =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing them is the point
  /^[^\x00-\x08\x0B-\x1F\x7F-\x9F\u200B\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]*$/;

/**
 * Whether `text` holds a noncharacter (U+FDD0-U+FDEF, and the last two code points of every
 * plane: U+FFFE, U+FFFF, U+1FFFE…): code points Unicode keeps out of interchange, which XML (the
 * RSS feeds) does not allow. Checked in code: the planes past the first have no pattern that reads
 * the same in every regex dialect.
 */
export function hasNoncharacter(text: string): boolean {
  for (const c of text) {
    const code = c.codePointAt(0)!;
    if ((code >= 0xfdd0 && code <= 0xfdef) || (code & 0xfffe) === 0xfffe) return true;
  }
  return false;
}

/** `text`, or its first `max` characters and "…" when it is longer: shown, never kilobytes of it. */
export const clip = (text: string, max: number): string =>
  text.length > max ? `${text.slice(0, max)}…` : text;

/**
 * One line of readable text, trimmed, 1 to `max` characters, under `NO_CONTROL_CHARACTERS`: what
 * a person names or explains once and others read (a key's name, an incident's title, a grant's
 * reason). `what` starts the refusal ("A key name"); parseInput adds its full stop.
 */
export const readableLine = (what: string, max: number) =>
  z
    .string()
    .trim()
    .min(1)
    .max(max)
    .regex(
      NO_CONTROL_CHARACTERS,
      `${what} cannot contain control or invisible formatting characters (such as a right-to-left override)`,
    );
