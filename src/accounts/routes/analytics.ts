import { queryTime } from "../../http/query-time.js";
import { EARLIEST_ISO_INSTANT } from "../../lib/iso-years.js";
import { z } from "zod";
import {
  accountAnalytics,
  GRANULARITIES,
  GROUPINGS,
  type AnalyticsFigures,
  type Granularity,
} from "../../books/analytics.js";
import { ApiError } from "../../http/errors.js";
import { defineRoute } from "../../http/route.js";
import { csvText } from "../../http/csv.js";
import { requireFeature } from "../tiers.js";

/**
 * GET /api/v1/analytics (Pro and Business): the account's calls per UTC hour or day — and per
 * tool, key or status — with credits, errors and latency percentiles, computed in SQL from the
 * books' request records (books/analytics.ts). JSON, or CSV with `format=csv` / Accept: text/csv.
 * The books are written by the exporter, so the newest calls appear within an export interval.
 */
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** The longest range per granularity (at most 168 hourly, 366 daily buckets per group). */
export const MAX_RANGE_MS: Record<Granularity, number> = { hour: 7 * DAY_MS, day: 366 * DAY_MS };
/** Without `from`: the last day (hourly) or the last 30 days (daily). */
const DEFAULT_RANGE_MS: Record<Granularity, number> = { hour: DAY_MS, day: 30 * DAY_MS };
/** How long a read waits for the books' database (PGlite starting, PostgreSQL reconnecting) before 503. */
const BOOKS_WAIT_MS = 5000;

const analyticsQuery = z.strictObject({
  from: queryTime(
    "Calls at or after this time (ISO 8601); default: `to` less a day (hour) or 30 days (day).",
  ),
  to: queryTime("Calls before this time (ISO 8601); default: now."),
  granularity: z
    .enum(GRANULARITIES)
    .default("hour")
    .describe("Bucket size, in UTC: hour (range up to 7 days) or day (range up to 366 days)."),
  group_by: z
    .enum(GROUPINGS)
    .optional()
    .describe("Split each bucket by tool, key id or HTTP status."),
  format: z
    .enum(["json", "csv"])
    .optional()
    .describe("csv: the buckets as text/csv (also chosen by Accept: text/csv)."),
});

const figuresSchema = z.object({
  calls: z.number().int(),
  credits: z.number().int().describe("Credits kept (charged less refunded)."),
  errors: z.number().int().describe("Calls answered with a status of 400 or more."),
  latency_p50_ms: z.number().nullable().describe("Median latency (percentile_cont, to 0.1 ms)."),
  latency_p95_ms: z
    .number()
    .nullable()
    .describe("95th-percentile latency (percentile_cont, to 0.1 ms)."),
});

const bucketSchema = z.object({
  bucket: z.string().describe("The bucket's start (ISO 8601, UTC)."),
  group: z
    .string()
    .nullable()
    .describe(
      "The tool, key id or status of this row (group_by); null without group_by, and for calls paid with x402 (no key).",
    ),
  ...figuresSchema.shape,
});

const analyticsSchema = z.object({
  object: z.literal("analytics"),
  from: z.string(),
  to: z.string(),
  granularity: z.enum(GRANULARITIES),
  group_by: z.enum(GROUPINGS).nullable(),
  data: z.array(bucketSchema).describe("Buckets with at least one call, oldest first."),
  totals: figuresSchema,
});

const figuresView = (f: AnalyticsFigures): z.infer<typeof figuresSchema> => ({
  calls: f.calls,
  credits: f.credits,
  errors: f.errors,
  latency_p50_ms: f.latencyP50Ms,
  latency_p95_ms: f.latencyP95Ms,
});

const CSV_COLUMNS = Object.keys(bucketSchema.shape) as (keyof z.infer<typeof bucketSchema>)[];

/** The range asked for, or a 400 `invalid_range` saying what is wrong with it. */
function rangeOf(query: z.infer<typeof analyticsQuery>, now: number) {
  const to = query.to === undefined ? now : Date.parse(query.to);
  // The default start is not before year 1, which the books cannot query (a 500 for a `to` in
  // the first day or month of year 1).
  const from =
    query.from === undefined
      ? Math.max(to - DEFAULT_RANGE_MS[query.granularity], EARLIEST_ISO_INSTANT)
      : Date.parse(query.from);
  if (from >= to)
    throw new ApiError("invalid_range", "`from` must be before `to`.", { param: "from" });
  const longest = MAX_RANGE_MS[query.granularity];
  if (to - from > longest)
    throw new ApiError(
      "invalid_range",
      `The range is too long for granularity=${query.granularity}: at most ${longest / DAY_MS} days${query.granularity === "hour" ? "; use granularity=day for longer ranges" : ""}.`,
      { param: "to" },
    );
  return { from, to };
}

export const analytics = defineRoute({
  method: "get",
  path: "/analytics",
  summary:
    "Pro and Business: calls, credits, errors and p50/p95 latency per UTC hour or day, optionally per tool, key or status, from the books; CSV with Accept: text/csv or format=csv.",
  auth: "key",
  errors: ["feature_not_in_tier", "invalid_range", "analytics_not_enabled", "books_unavailable"],
  query: analyticsQuery,
  response: analyticsSchema,
  alsoProduces: {
    mediaType: "text/csv",
    headers: {
      "Content-Disposition": {
        description: 'With text/csv: attachment; filename="analytics.csv".',
      },
    },
  },
  async handler({ services, caller, query, req }) {
    requireFeature(caller.account.tier, "analytics");
    if (!services.books)
      throw new ApiError(
        "analytics_not_enabled",
        "Analytics read the books, and this gateway runs without them (DATABASE_URL=none).",
      );
    const { from, to } = rangeOf(query, Date.now());
    const db = await services.books.ready(BOOKS_WAIT_MS);
    const answer = await accountAnalytics(db, caller.account.id, {
      from,
      to,
      granularity: query.granularity,
      groupBy: query.group_by ?? null,
    });
    const data = answer.buckets.map((b) => ({
      bucket: new Date(b.bucket).toISOString(),
      group: b.group,
      ...figuresView(b),
    }));
    const csv =
      query.format === "csv" ||
      (query.format === undefined && req.accepts(["application/json", "text/csv"]) === "text/csv");
    if (csv)
      return {
        text: {
          contentType: "text/csv; charset=utf-8",
          body: csvText(
            CSV_COLUMNS,
            data.map((row) => CSV_COLUMNS.map((column) => row[column] ?? "")),
          ),
        },
        headers: { "Content-Disposition": 'attachment; filename="analytics.csv"' },
      };
    return {
      body: {
        object: "analytics",
        from: new Date(from).toISOString(),
        to: new Date(to).toISOString(),
        granularity: query.granularity,
        group_by: query.group_by ?? null,
        data,
        totals: figuresView(answer.totals),
      },
    };
  },
});
