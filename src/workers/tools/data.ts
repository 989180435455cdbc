import * as chrono from "chrono-node";
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

const invalid = (message: string, param: string) =>
  new WorkerError(422, "invalid_input", message, param);

export const jsonpathQuery = implement(jsonpathQueryTool, {
  async run(input) {
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
    return { values: found.map((r) => r.value), paths: found.map((r) => r.path) };
  },
});

export const dateParse = implement(dateParseTool, {
  async run(input) {
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

export const cronExplain = implement(cronExplainTool, {
  async run(input) {
    if (!IANAZone.isValidZone(input.timezone))
      throw invalid(
        `Unknown time zone "${input.timezone}"; use an IANA name such as Europe/Paris.`,
        "timezone",
      );
    let description: string;
    let interval;
    try {
      description = cronstrue.toString(input.expression, {
        use24HourTimeFormat: true,
        throwExceptionOnParseError: true,
      });
      interval = CronExpressionParser.parse(input.expression, {
        currentDate: input.from ? new Date(input.from) : new Date(),
        tz: input.timezone,
        strict: false,
      });
    } catch (err) {
      throw invalid(
        `Not a valid cron expression: ${String((err as Error).message ?? err)}`,
        "expression",
      );
    }
    const next_runs: string[] = [];
    for (let i = 0; i < input.count && interval.hasNext(); i++) {
      next_runs.push(
        DateTime.fromJSDate(interval.next().toDate()).setZone(input.timezone).toISO()!,
      );
    }
    return { description, next_runs };
  },
});
