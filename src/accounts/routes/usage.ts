import { queryInteger } from "../../http/query-integer.js";
import { queryTime } from "../../http/query-time.js";
import { z } from "zod";
import { usagePage } from "../../books/usage.js";
import { ApiError } from "../../http/errors.js";
import { defineRoute } from "../../http/route.js";
import { csvText } from "../../http/csv.js";
import { InvalidCursorError, LEDGER_KINDS, type Page } from "../../store/types.js";
import { ledgerEntryView, ledgerEntryViewSchema, listOf } from "../views.js";

export const pageQuery = z.strictObject({
  limit: queryInteger({ min: 1, max: 100, default: 50 }),
  cursor: z.string().max(64).optional(),
});

/**
 * A store page; a cursor the list cannot read is 400 `invalid_cursor`, never a restart from the
 * top. A cursor is a position in the caller's own list, so a well-formed one it was not given
 * pages the caller's own entries from there.
 */
export async function pageOf<T>(load: Promise<Page<T>>): Promise<Page<T>> {
  try {
    return await load;
  } catch (err) {
    if (err instanceof InvalidCursorError)
      throw new ApiError(
        "invalid_cursor",
        "The cursor is not one this list can read; use a next_cursor value, or omit it to start from the top.",
        { param: "cursor" },
      );
    throw err;
  }
}

/**
 * The `from`/`to` of a list's query as epoch ms; a range that holds no instant (`from` at or after
 * `to`, most often the two swapped) is 400 `invalid_range`, as analytics answers it: an empty
 * list would read as "nothing happened" to someone reconciling a bill.
 */
export function timeRangeOf(query: { from?: string; to?: string }): {
  from?: number;
  to?: number;
} {
  const from = query.from === undefined ? undefined : Date.parse(query.from);
  const to = query.to === undefined ? undefined : Date.parse(query.to);
  if (from !== undefined && to !== undefined && from >= to)
    throw new ApiError("invalid_range", "`from` must be before `to`.", { param: "from" });
  return { from, to };
}

/** JSON pages hold at most this many entries; a CSV export up to CSV_MAX_ROWS. */
const JSON_MAX_ROWS = 100;
const CSV_MAX_ROWS = 10_000;
/** How long a usage read waits for the books' database (PGlite starting, PostgreSQL reconnecting) before 503. */
export const BOOKS_WAIT_MS = 5000;

const usageQuery = z.strictObject({
  limit: queryInteger({ min: 1, max: CSV_MAX_ROWS }).describe(
    `Entries per page: default 50, at most ${JSON_MAX_ROWS} (CSV: default and at most ${CSV_MAX_ROWS}).`,
  ),
  cursor: z.string().max(64).optional(),
  // Not empty: `tool=` matches no entry, and an empty page would read as "no usage" (422 instead).
  tool: z.string().min(1).max(64).optional().describe("Only entries of this tool."),
  key: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .describe("Only entries made with this API key (its id)."),
  kind: z.enum(LEDGER_KINDS).optional(),
  from: queryTime("Entries at or after this time (ISO 8601)."),
  to: queryTime("Entries before this time (ISO 8601)."),
  format: z
    .enum(["json", "csv"])
    .optional()
    .describe("csv: the page as text/csv (also chosen by Accept: text/csv)."),
});

/** The CSV's columns are the JSON entry's fields, in the same order. */
const CSV_COLUMNS = Object.keys(ledgerEntryViewSchema.shape) as (keyof z.infer<
  typeof ledgerEntryViewSchema
>)[];

export const usage = defineRoute({
  method: "get",
  path: "/usage",
  summary:
    "The account's ledger: every credit change, newest first, paginated; filter by tool, key, kind and time; CSV with Accept: text/csv or format=csv.",
  auth: "key",
  errors: ["invalid_range", "invalid_cursor", "books_unavailable"],
  query: usageQuery,
  response: listOf(ledgerEntryViewSchema),
  alsoProduces: {
    mediaType: "text/csv",
    headers: {
      "Content-Disposition": { description: 'With text/csv: attachment; filename="usage.csv".' },
      Link: {
        description:
          'With text/csv, when there are more entries: the next page, as <url>; rel="next" (the JSON answer has next_cursor instead).',
      },
    },
  },
  async handler({ services, caller, query, req }) {
    const csv =
      query.format === "csv" ||
      (query.format === undefined && req.accepts(["application/json", "text/csv"]) === "text/csv");
    const limit = query.limit ?? (csv ? CSV_MAX_ROWS : 50);
    if (!csv && limit > JSON_MAX_ROWS)
      throw new ApiError(
        "validation_failed",
        `Invalid query field "limit": at most ${JSON_MAX_ROWS} (${CSV_MAX_ROWS} for a CSV export).`,
        { param: "limit" },
      );
    const filter = {
      tool: query.tool,
      keyId: query.key,
      kind: query.kind,
      ...timeRangeOf(query),
    };
    const db = services.books ? await services.books.ready(BOOKS_WAIT_MS) : null;
    const page = await pageOf(
      usagePage(services.store, db, caller.account.id, filter, { cursor: query.cursor, limit }),
    );
    const data = page.items.map(ledgerEntryView);
    if (csv) {
      // A reason is free text (an operator's grant): csvText keeps a formula in it from running.
      const body = csvText(
        CSV_COLUMNS,
        data.map((e) => CSV_COLUMNS.map((column) => e[column] ?? "")),
      );
      // format=csv and the limit in the link itself: a CSV chosen by Accept, followed by a client
      // that does not send Accept again, would otherwise get JSON pages of 50. Absolute, on
      // PUBLIC_BASE_URL (as versioning's links): behind a proxy serving the gateway under a path,
      // a root-relative reference would resolve outside it.
      const next = page.nextCursor
        ? new URLSearchParams({
            ...(req.query as Record<string, string>),
            format: "csv",
            limit: String(limit),
            cursor: page.nextCursor,
          })
        : null;
      return {
        text: { contentType: "text/csv; charset=utf-8", body },
        headers: {
          "Content-Disposition": 'attachment; filename="usage.csv"',
          ...(next
            ? {
                Link: `<${services.config.publicBaseUrl}${req.baseUrl}${req.path}?${next}>; rel="next"`,
              }
            : {}),
        },
      };
    }
    return { body: { object: "list", data, next_cursor: page.nextCursor } };
  },
});
