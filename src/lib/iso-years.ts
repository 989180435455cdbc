/**
 * The instants an ISO 8601 date-time with a four-digit year can write in UTC: years 1 to 9999.
 * An offset can carry a time written in range outside it (`0001-01-01T00:00:00+14:00` is in year
 * 0, `9999-12-31T23:59:59-23:59` in year 10000, written back as `+010000-…Z`), and PostgreSQL's
 * timestamptz reads neither end past them.
 */
export const EARLIEST_ISO_INSTANT = Date.parse("0001-01-01T00:00:00Z");
export const LATEST_ISO_INSTANT = Date.parse("9999-12-31T23:59:59.999Z");
