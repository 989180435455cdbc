import type { DateTime } from "luxon";

/**
 * A date-time as ISO 8601 with its exact UTC offset. Luxon writes the offset in whole minutes
 * (`+00:09`), but a zone's local-mean-time era (Paris before 1911: +00:09:21) has seconds, so its
 * local time and written offset disagreed by those seconds. Such an offset keeps its seconds,
 * `±HH:MM:SS` (as Python's isoformat, Java's OffsetDateTime and Temporal write it); every other
 * offset is written as before.
 */
export function isoWithExactOffset(dt: DateTime): string {
  const seconds = Math.round(dt.offset * 60);
  if (seconds % 60 === 0) return dt.toISO()!;
  const abs = Math.abs(seconds);
  const two = (n: number) => String(n).padStart(2, "0");
  const offset = `${seconds < 0 ? "-" : "+"}${two(Math.floor(abs / 3600))}:${two(Math.floor(abs / 60) % 60)}:${two(abs % 60)}`;
  return `${dt.toISO({ includeOffset: false })!}${offset}`;
}

/** A UTC offset in whole minutes, rounded to the nearest (half a minute away from zero). */
export function offsetMinutes(dt: DateTime): number {
  const seconds = Math.round(dt.offset * 60);
  return Math.sign(seconds) * Math.round(Math.abs(seconds) / 60) || 0;
}
