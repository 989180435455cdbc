import { z } from "zod";

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
    .optional()
    .describe(`${description} A date alone is its start, 00:00 UTC.`);
