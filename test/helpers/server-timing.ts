/**
 * A `Server-Timing` answer header read back as a client reads it (`name;dur=<ms>, …`): each
 * metric's duration in milliseconds, by name, in the header's order; a metric without a
 * duration is left out. What the gateway writes is src/tools/timing.ts.
 */
export function readServerTiming(header: string | null | undefined): Record<string, number> {
  const durations: Record<string, number> = {};
  for (const metric of (header ?? "").split(",")) {
    const [name, ...params] = metric.split(";").map((part) => part.trim());
    const dur = params.find((param) => param.startsWith("dur="));
    const ms = dur === undefined ? Number.NaN : Number(dur.slice(4));
    if (name && Number.isFinite(ms)) durations[name] = ms;
  }
  return durations;
}
