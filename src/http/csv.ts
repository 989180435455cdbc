import { lazyRequire } from "../lib/lazy-require.js";

const papa = lazyRequire<typeof import("papaparse")>("papaparse");

/**
 * A table as the CSV an export answers with (RFC 4180, CRLF line ends, a header row). A text cell
 * starting with = + - @ (or a tab or CR, or the full-width = + - @ a spreadsheet may read as
 * them) is written with a leading ', so a spreadsheet shows it rather than running it as a
 * formula. papaparse's own `escapeFormulae: true` pattern ends in `.*$` without the s flag, so a
 * cell holding a line break was never matched: the check is on the first character alone.
 * Every line ends in CRLF, the last too, and only once: papaparse ends a table of no rows after
 * its header itself (one more CRLF read as an empty row).
 */
export function csvText(fields: readonly string[], rows: unknown[][]): string {
  const text = papa().unparse(
    { fields: [...fields], data: rows },
    { escapeFormulae: /^[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/ },
  );
  return text.endsWith("\r\n") ? text : `${text}\r\n`;
}
