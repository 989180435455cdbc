import { z } from "zod";
import { defineTool } from "../definition.js";

const lat = z.number().min(-90).max(90).describe("Latitude in degrees.");
const lon = z.number().min(-180).max(180).describe("Longitude in degrees.");
const point = z.strictObject({ lat, lon });

export const geoDistance = defineTool({
  name: "geo-distance",
  aliases: ["distance", "haversine"],
  title: "Distance between coordinates",
  description:
    "Great-circle distance and initial bearing between two coordinates, and the length of a path through several (turf).",
  cost: 1,
  category: "geo",
  tags: [
    "distance",
    "haversine",
    "bearing",
    "coordinates",
    "gps",
    "latitude",
    "longitude",
    "route length",
  ],
  pool: "general",
  timeoutMs: 5_000,
  input: z
    .strictObject({
      points: z
        .array(point)
        .min(2)
        .max(10_000)
        .describe("Two or more points; the distance runs through them in order."),
      units: z
        .enum(["kilometers", "miles", "meters", "nauticalmiles"])
        .default("kilometers")
        .describe("The unit of distances."),
    })
    .meta({
      examples: [
        {
          points: [
            { lat: 48.8566, lon: 2.3522 },
            { lat: 51.5074, lon: -0.1278 },
          ],
          units: "kilometers",
        },
      ],
    }),
  output: z.object({
    distance: z.number().describe("The total length of the path."),
    units: z.string().describe("The unit of distances."),
    legs: z
      .array(
        z.object({
          distance: z.number().describe("Length of this leg."),
          bearing: z.number().describe("Initial bearing in degrees from north, -180 to 180."),
        }),
      )
      .describe("Each leg, in order."),
  }),
});

export const geoTimezone = defineTool({
  name: "geo-timezone",
  aliases: ["coordinate-timezone", "tz-lookup"],
  title: "Time zone of a coordinate",
  description:
    "The IANA time zone at a latitude and longitude (tz-lookup), with its current UTC offset and local time.",
  cost: 1,
  category: "geo",
  tags: ["time zone", "timezone", "iana", "coordinates", "local time", "utc offset"],
  pool: "general",
  timeoutMs: 5_000,
  input: z
    .strictObject({
      lat,
      lon,
      at: z.iso
        .datetime({ offset: true })
        .optional()
        .describe("The instant for the offset and local time (ISO 8601); now if omitted."),
    })
    .meta({ examples: [{ lat: 40.7128, lon: -74.006, at: "2026-11-22T12:00:00Z" }] }),
  output: z.object({
    timezone: z.string().describe("The IANA time zone."),
    offset_minutes: z
      .number()
      .int()
      .describe(
        "Its UTC offset at that instant, in minutes, rounded to the nearest minute (a local-mean-time offset before standard time, e.g. Paris +00:09:21 before 1911, has seconds; local_time's offset is exact).",
      ),
    local_time: z
      .string()
      .describe(
        "The local time at that instant, ISO 8601 with its exact offset (±HH:MM, or ±HH:MM:SS when the offset has seconds).",
      ),
  }),
});
