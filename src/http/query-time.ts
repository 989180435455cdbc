import { z } from "zod";
import { EARLIEST_ISO_INSTANT, LATEST_ISO_INSTANT } from "../lib/iso-years.js";

/**
 * A query names an instant of years 1 to 9999 once its offset is applied. Year 0000, or
 * 0001-01-01 with a positive offset, parses but is before year 1: the books' queries failed on it
 * (500) where the caller had asked for something no ledger holds.
 */
const withinCalendar = (value: string) => {
  const at = Date.parse(value);
  return at >= EARLIEST_ISO_INSTANT && at <= LATEST_ISO_INSTANT;
};
const OUTSIDE_CALENDAR = {
  error: "must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z once its offset is applied",
};

/**
 * A time in a query string: an ISO 8601 date-time with its offset, or a date alone, meaning its
 * start (00:00 UTC). `Date.parse` reads both, as UTC for the date.
 */
export const queryTime = (description: string) =>
  z
    .union([z.iso.datetime({ offset: true }), z.iso.date()], {
      error:
        "must be an ISO 8601 date-time with its offset (2026-11-27T09:00:00Z) or a date (2026-11-27)",
    })
    .refine(withinCalendar, OUTSIDE_CALENDAR)
    .optional()
    .describe(`${description} A date alone is its start, 00:00 UTC.`);
