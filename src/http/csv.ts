import { lazyRequire } from "../lib/lazy-require.js";

const papa = lazyRequire<typeof import("papaparse")>("papaparse");

/**
 * A table as the CSV an export answers with (RFC 4180, CRLF line ends, a header row). A text cell
 * starting with = + - @ (or a tab or CR) is written with a leading ', so a spreadsheet shows it
 * rather than running it as a formula. papaparse's own `escapeFormulae: true` pattern ends in
 * `.*$` without the s flag, so a cell holding a line break was never matched: the check is on the
 * first character alone.
 */
export function csvText(fields: readonly string[], rows: unknown[][]): string {
  return `${papa().unparse({ fields: [...fields], data: rows }, { escapeFormulae: /^[=+\-@\t\r]/ })}\r\n`;
}
