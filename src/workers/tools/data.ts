import { CronExpressionParser } from "cron-parser";
import cronstrue from "cronstrue";
import { JSONPath } from "jsonpath-plus";
import { DateTime, IANAZone } from "luxon";
import {
  cronExplain as cronExplainTool,
  dateParse as dateParseTool,
  jsonpathQuery as jsonpathQueryTool,
} from "../../tools/catalogue/data.js";
import { WorkerError } from "../errors.js";
import { withTimeLimit } from "../time-limit.js";
import { implement } from "./implementation.js";
import { lazy } from "../../lib/lazy-require.js";

const invalid = (message: string, param: string) =>
  new WorkerError(422, "invalid_input", message, param);

/**
 * Why a path is not JSONPath, or null. jsonpath-plus reads whatever it is given (`$[[[` walks the
 * whole document), so the shape is checked first: it starts at `$`, its brackets and parentheses
 * close in order outside quoted names, a bracket does not open directly inside another (only a
 * filter's parentheses hold nested brackets), and it does not end half-way (`.`, `..`, `[`).
 */
export function malformedJsonPath(path: string): string | null {
  if (!path.startsWith("$")) return "a JSONPath starts with $";
  const open: string[] = [];
  let quote: string | null = null;
  let previous = "";
  for (const char of path) {
    if (quote) {
      if (char === quote) quote = null;
      continue;
    }
    if (char === "'" || char === '"') quote = char;
    else if (char === "[") {
      if (previous === "[") return "a bracket opens directly inside another";
      open.push("]");
    } else if (char === "(") open.push(")");
    else if (char === "]" || char === ")") {
      if (open.pop() !== char) return `an unmatched ${char}`;
    }
    if (char.trim()) previous = char;
  }
  if (quote) return "a quoted name is not closed";
  if (open.length > 0) return `a ${open.at(-1) === "]" ? "[" : "("} is not closed`;
  if (previous === ".") return "it ends after a dot";
  return null;
}

export const jsonpathQuery = implement(jsonpathQueryTool, {
  async run(input) {
    const malformed = malformedJsonPath(input.path);
    if (malformed) throw invalid(`Invalid JSONPath: ${malformed}.`, "path");
    // "safe" evaluates filter expressions with jsonpath-plus's own interpreter, never eval().
    const found = withTimeLimit(1000, "This JSONPath query", "path", () => {
      try {
        return JSONPath({
          path: input.path,
          json: input.json as object,
          resultType: "all",
          eval: "safe",
          wrap: true,
        }) as { path: string; value: unknown }[];
      } catch (err) {
        throw invalid(`Invalid JSONPath: ${(err as Error).message}`, "path");
      }
    });
    // jsonpath-plus answers undefined, not [], for a document that is null, 0 or "" (it threw, 502).
    const all = found ?? [];
    return { values: all.map((r) => r.value), paths: all.map((r) => r.path) };
  },
});

/** chrono (~0.2 s to load) is for date-parse only, which runs in the heavy pool's threads: the workers' main thread, which imports this module for cron-explain, never loads it. */
const chronoNode = lazy(() => import("chrono-node"));

export const dateParse = implement(dateParseTool, {
  async run(input) {
    const chrono = await chronoNode();
    const instant = input.reference ? new Date(input.reference) : new Date();
    const results = chrono.parse(
      input.text,
      { instant, timezone: input.timezone_offset_minutes },
      { forwardDate: input.forward_date },
    );
    return {
      dates: results.map((r) => ({
        text: r.text,
        index: r.index,
        start: r.start.date().toISOString(),
        end: r.end ? r.end.date().toISOString() : null,
        certain: (
          ["year", "month", "day", "weekday", "hour", "minute", "second", "timezoneOffset"] as const
        ).filter((c) => r.start.isCertain(c)),
      })),
    };
  },
});

/**
 * How far ahead cron-explain looks for runs. cron-parser steps a day at a time through days that
 * do not match (about 4 ms a year in a time zone), so the horizon, not a clock, is what bounds the
 * time a call holds the workers' shared event loop: about 200 ms at worst, whatever the load.
 */
export const CRON_HORIZON_YEARS = 50;

export const cronExplain = implement(cronExplainTool, {
  async run(input) {
    if (!IANAZone.isValidZone(input.timezone))
      throw invalid(
        `Unknown time zone "${input.timezone}"; use an IANA name such as Europe/Paris.`,
        "timezone",
      );
    const from = input.from ? new Date(input.from) : new Date();
    const horizon = new Date(from);
    horizon.setUTCFullYear(horizon.getUTCFullYear() + CRON_HORIZON_YEARS);
    let description: string;
    let interval;
    try {
      description = cronstrue.toString(input.expression, {
        use24HourTimeFormat: true,
        throwExceptionOnParseError: true,
      });
      interval = CronExpressionParser.parse(input.expression, {
        currentDate: from,
        endDate: horizon,
        tz: input.timezone,
        strict: false,
      });
    } catch (err) {
      // cronstrue throws strings that already begin "Error: ".
      const reason = String((err as Error).message ?? err).replace(/^(Error: )+/, "");
      throw invalid(`Not a valid cron expression: ${reason}`, "expression");
    }
    // Runs years apart (the fifth Monday of a February) took cron-parser seconds to find, on the
    // workers' shared event loop, and every other call waited. take() stops at the horizon.
    const next_runs = interval
      .take(input.count)
      .map((run) => DateTime.fromJSDate(run.toDate()).setZone(input.timezone).toISO()!);
    if (next_runs.length < input.count)
      throw invalid(
        `This expression runs ${next_runs.length} time(s) in the next ${CRON_HORIZON_YEARS} years, fewer than the ${input.count} asked for; ask for fewer.`,
        "count",
      );
    return { description, next_runs };
  },
});
