import { z } from "zod";

/**
 * The rules for short text a person writes once and others read, shown in pages, feeds, tables,
 * terminals and logs (key names, incident titles and messages), and handed to LLM agents by
 * /status.json: no control characters, no invisible reordering, no invisible formatting, no
 * noncharacters. A NUL, an ESC starting a terminal escape sequence or a BEL was stored and shown as
 * it came; a right-to-left override (U+202E) showed "gnp.exe" as "exe.png", and the key's prefix
 * after it reversed too; tag characters (U+E0020–U+E007F) carried a whole ASCII sentence no one
 * sees but a model reads, and a Hangul filler (U+3164) made a title that looks empty.
 *
 * The published pattern (below) is a class with no \p{…}, so the OpenAPI document's pattern reads
 * the same in JavaScript and Python (whose re has no \p): control characters (Cc), the
 * bidirectional embeddings, overrides and isolates (the "Trojan Source" set), the zero width space,
 * word joiner, invisible operators and U+FEFF. The gateway also checks the whole rule
 * (`hasInvisibleFormatting`), by Unicode property, when zod runs the pattern.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: refusing them is the point
const PUBLISHED = /^[^\x00-\x1F\x7F-\x9F\u200B\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]*$/;
const PUBLISHED_BUT_LINES =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing them is the point
  /^[^\x00-\x08\x0B-\x1F\x7F-\x9F\u200B\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]*$/;

/**
 * A pattern whose `source` is what the OpenAPI document publishes, and which matches only text
 * that also passes `alsoRequired`: zod runs `test` (which calls `exec`) and publishes `source`, so
 * one object is both the documented pattern and the whole check, with zod's one message.
 */
class PublishedPattern extends RegExp {
  readonly #alsoRequired: (text: string) => boolean;
  constructor(published: RegExp, alsoRequired: (text: string) => boolean) {
    super(published.source, published.flags);
    this.#alsoRequired = alsoRequired;
  }
  // split, matchAll and the like build plain copies: the extra check is for test and exec.
  static override get [Symbol.species]() {
    return RegExp;
  }
  override exec(text: string): RegExpExecArray | null {
    return this.#alsoRequired(text) ? super.exec(text) : null;
  }
}

// What may sit next to a joiner: letters, marks, digits, punctuation, symbols.
const GRAPHIC = String.raw`\p{L}\p{M}\p{N}\p{P}\p{S}`;
// The zero width non-joiner and joiner, and the direction marks (LRM, RLM and the Arabic letter
// mark): kept, as emoji sequences, Indic and Arabic-script names need them and they reorder nothing.
const JOINERS = String.raw`\u200C\u200D`;
const MARKS = String.raw`\u061C\u200E\u200F`;
/** Control, format, line and paragraph separators, private use, lone surrogates, default ignorables. */
const invisible = (kept: string) =>
  new RegExp(
    String.raw`(?![${kept}${JOINERS}${MARKS}])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}\p{Default_Ignorable_Code_Point}]`,
    "u",
  );
const INVISIBLE = invisible("");
const INVISIBLE_BUT_LINES = invisible(String.raw`\t\n`);
// A joiner between two visible characters (the first may carry a variation selector: ❤️‍🔥).
const LOOSE_JOINER = new RegExp(`(?<![${GRAPHIC}])[${JOINERS}]|[${JOINERS}](?![${GRAPHIC}])`, "u");
const DOUBLED_MARK = new RegExp(`[${MARKS}]{2}`, "u");
// Something that shows: not white space, the blank braille pattern, nor a kept invisible character.
const VISIBLE = new RegExp(`[^\\s\\u2800${JOINERS}${MARKS}]`, "u");

const MONGOLIAN_LETTER = String.raw`(?=\p{L})\p{Script=Mongolian}`;
// "gbsct" in tag characters, as a pattern: \u{e0067}\u{e0062}…
const tagged = (ascii: string) =>
  [...ascii].map((c) => `\\u{${(0xe0000 + c.codePointAt(0)!).toString(16)}}`).join("");
/**
 * The default-ignorable characters kept, each only where it means something, as the base
 * character before it decides: anywhere else a selector is a free choice of 256 and carries a
 * hidden byte ("Ignore prior instructions" under an ordinary title, one byte per letter).
 * - U+FE0E/U+FE0F (text or emoji presentation) after an emoji that has the choice: ❤️, ☺️, and the
 *   digits, # and * of a keycap (1️⃣, the U+20E3 after it is a visible mark).
 * - U+FE00–FE0D and the ideographic variation selectors after an ideograph (a name's glyph, 葛󠄀).
 * - The Mongolian free variation selectors after a Mongolian letter, and its vowel separator
 *   (U+180E) between two Mongolian letters.
 * - Tag characters in the only three flags Unicode recommends (England, Scotland, Wales): any
 *   other tag run under 🏴 is seven hidden characters, not a flag anyone's system draws.
 * One pass, looking at the text as it came: a selector after a kept selector or after a flag's
 * cancel tag has no base of its own, so it stays and is refused.
 */
const MEANT = new RegExp(
  [
    `(?<=\\u{1F3F4})(?:${["gbeng", "gbsct", "gbwls"].map(tagged).join("|")})\\u{E007F}`,
    String.raw`(?<=\p{Emoji})[\uFE0E\uFE0F]`,
    String.raw`(?<=\p{Ideographic})[\uFE00-\uFE0D\u{E0100}-\u{E01EF}]`,
    String.raw`(?<=${MONGOLIAN_LETTER})[\u180B-\u180D\u180F]`,
    String.raw`(?<=${MONGOLIAN_LETTER})\u180E(?=${MONGOLIAN_LETTER})`,
  ].join("|"),
  "gu",
);

/**
 * Whether `text` holds invisible formatting a reader cannot see: a character of Unicode's Cc
 * (but tab and line feed when `lines`), Cf, Zl, Zp, Co or Cs categories or a default ignorable
 * code point (U+00AD, U+3164, U+FFA0, U+E0020…), or a text with no visible character at all. The
 * joiners and direction marks are kept where they mean something: a joiner between two visible
 * characters, no mark next to another; variation selectors and tag characters only as `MEANT` says.
 */
function hasInvisibleFormatting(text: string, lines = false): boolean {
  const rest = text.replace(MEANT, "");
  return (
    (lines ? INVISIBLE_BUT_LINES : INVISIBLE).test(rest) ||
    LOOSE_JOINER.test(rest) ||
    DOUBLED_MARK.test(rest) ||
    !VISIBLE.test(rest)
  );
}

/** Text of one line that is all readable (`hasInvisibleFormatting`); its `source` is published. */
export const NO_CONTROL_CHARACTERS = new PublishedPattern(
  PUBLISHED,
  (text) => !hasInvisibleFormatting(text),
);

/** `NO_CONTROL_CHARACTERS` but for tab and line feed: for text of several lines or columns. */
export const NO_CONTROL_CHARACTERS_BUT_LINES = new PublishedPattern(
  PUBLISHED_BUT_LINES,
  (text) => !hasInvisibleFormatting(text, true),
);

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
