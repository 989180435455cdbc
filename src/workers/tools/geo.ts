import tzlookup from "@photostructure/tz-lookup";
import bearing from "@turf/bearing";
import distance from "@turf/distance";
import { DateTime } from "luxon";
import {
  geoDistance as geoDistanceTool,
  geoTimezone as geoTimezoneTool,
} from "../../tools/catalogue/geo.js";
import { isoWithExactOffset, offsetMinutes } from "./exact-offset.js";
import { implement } from "./implementation.js";

const round = (n: number) => Math.round(n * 1e6) / 1e6;

export const geoDistance = implement(geoDistanceTool, {
  async run(input) {
    const legs = input.points.slice(1).map((to, i) => {
      const from = input.points[i]!;
      const a = [from.lon, from.lat];
      const b = [to.lon, to.lat];
      return {
        distance: round(distance(a, b, { units: input.units })),
        bearing: round(bearing(a, b)),
      };
    });
    return { distance: round(legs.reduce((n, l) => n + l.distance, 0)), units: input.units, legs };
  },
});

export const geoTimezone = implement(geoTimezoneTool, {
  async run(input) {
    const timezone = tzlookup(input.lat, input.lon);
    const local = (input.at ? DateTime.fromISO(input.at) : DateTime.now()).setZone(timezone);
    return {
      timezone,
      offset_minutes: offsetMinutes(local),
      local_time: isoWithExactOffset(local),
    };
  },
});
