import type { BooksDatabase } from "./database.js";

/**
 * An account's calls over a time range, per UTC hour or day (and per tool, key or status),
 * computed in SQL from its request records (requests.ts): calls, credits kept, errors, and the
 * median and 95th-percentile latency (`percentile_cont`: linear interpolation between the
 * records' whole milliseconds, answered to 0.1 ms). Every query is bound to one account id.
 */
export const GRANULARITIES = ["hour", "day"] as const;
export type Granularity = (typeof GRANULARITIES)[number];
export const GROUPINGS = ["tool", "key", "status"] as const;
export type Grouping = (typeof GROUPINGS)[number];

export interface AnalyticsQuery {
  /** Epoch ms, inclusive. */
  from: number;
  /** Epoch ms, exclusive. */
  to: number;
  granularity: Granularity;
  groupBy: Grouping | null;
}

export interface AnalyticsFigures {
  calls: number;
  credits: number;
  errors: number;
  /** null when no call of the bucket has a recorded latency. */
  latencyP50Ms: number | null;
  latencyP95Ms: number | null;
}

export interface AnalyticsBucket extends AnalyticsFigures {
  /** The bucket's start (epoch ms, a UTC hour or day). */
  bucket: number;
  /** The tool, key id or HTTP status of the group; null without grouping, or a keyless (x402) call's key. */
  group: string | null;
}

export interface AnalyticsAnswer {
  buckets: AnalyticsBucket[];
  totals: AnalyticsFigures;
}

/**
 * What each grouping groups by. A call whose status was never recorded (its process died before
 * writing its timing) is grouped as `unknown`.
 */
const GROUP_EXPRESSION: Record<Grouping, string> = {
  tool: "tool",
  key: "key_id",
  status: "coalesce(status::text, 'unknown')",
};

/**
 * An error is an answer of 400 or more; a call whose status was never recorded counts as one
 * when its credits were refunded (every failed call is refunded, no successful one is).
 */
const FIGURES = `count(*) AS calls,
  coalesce(sum(credits), 0) AS credits,
  count(*) FILTER (WHERE status >= 400 OR (status IS NULL AND refunded > 0)) AS errors,
  round(percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms)::numeric, 1) AS p50,
  round(percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms)::numeric, 1) AS p95`;

type FiguresRow = {
  calls: string | number;
  credits: string | number;
  errors: string | number;
  p50: string | number | null;
  p95: string | number | null;
};

const figuresOf = (row: FiguresRow | undefined): AnalyticsFigures => ({
  calls: Number(row?.calls ?? 0),
  credits: Number(row?.credits ?? 0),
  errors: Number(row?.errors ?? 0),
  latencyP50Ms: row?.p50 == null ? null : Number(row.p50),
  latencyP95Ms: row?.p95 == null ? null : Number(row.p95),
});

export async function accountAnalytics(
  db: BooksDatabase,
  accountId: string,
  query: AnalyticsQuery,
): Promise<AnalyticsAnswer> {
  const range = [accountId, new Date(query.from).toISOString(), new Date(query.to).toISOString()];
  // The minted_at bounds only let PostgreSQL skip the months outside the range (the table is
  // partitioned by it): a call's request id is minted just before its debit (`at`), so minted_at
  // is within seconds before `at` (a day of margin for clocks); ids naming no slot are 1970.
  const where = `account_id = $1 AND at >= $2::timestamptz AND at < $3::timestamptz
    AND minted_at < $3::timestamptz + interval '1 day'
    AND (minted_at >= $2::timestamptz - interval '1 day' OR minted_at = to_timestamp(0))`;
  const group = query.groupBy ? GROUP_EXPRESSION[query.groupBy] : "NULL::text";
  const bucket = `date_trunc('${query.granularity}', at, 'UTC')`;
  // The buckets and the totals in one statement, so one snapshot: as two queries, an export
  // landing between them answered totals that counted calls no bucket showed.
  const rows = await db.query<
    FiguresRow & { bucket_ms: string | number | null; grp: string | null; total: number }
  >(
    `SELECT (extract(epoch FROM ${bucket}) * 1000)::bigint AS bucket_ms,
            ${group} AS grp, GROUPING(${bucket}) AS total, ${FIGURES}
       FROM request_records WHERE ${where}
      GROUP BY GROUPING SETS ((${bucket}, ${group}), ())
      ORDER BY 3, 1, ${group} COLLATE "C"`,
    range,
  );
  const buckets = rows.filter((row) => Number(row.total) === 0);
  return {
    buckets: buckets.map((row) => ({
      bucket: Number(row.bucket_ms),
      group: row.grp,
      ...figuresOf(row),
    })),
    totals: figuresOf(rows.find((row) => Number(row.total) === 1)),
  };
}
