import { z } from "zod";

/**
 * The shape of /status.json (and of an incident as the admin routes answer it), as zod schemas:
 * the report's types are inferred from them and the OpenAPI document is generated from them, so
 * what the page sends and what the document says are one definition.
 */
const timestamp = z.iso.datetime().describe("ISO 8601, UTC.");

export const incidentViewSchema = z.strictObject({
  id: z.string(),
  title: z.string(),
  impact: z.enum(["minor", "major"]),
  status: z
    .enum(["investigating", "identified", "monitoring", "resolved"])
    .describe("The latest update's status."),
  components: z.array(z.string()).describe("Ids of the affected components."),
  created_at: timestamp,
  resolved_at: timestamp.nullable(),
  updates: z
    .array(
      z.strictObject({
        status: z.enum(["investigating", "identified", "monitoring", "resolved"]),
        message: z.string(),
        at: timestamp,
      }),
    )
    .describe("Oldest first; the first is the opening message."),
});

const percentilesSchema = z.strictObject({
  p50: z.number().nullable(),
  p95: z.number().nullable(),
  p99: z.number().nullable(),
  source: z
    .enum(["http", "checks"])
    .describe(
      "http: requests this process served on the component's routes; checks: the checks' own round trips.",
    ),
  samples: z.number().int(),
});

export const componentReportSchema = z.strictObject({
  id: z.string(),
  name: z.string(),
  group: z.string(),
  state: z.enum(["operational", "degraded", "not_configured", "unknown"]),
  detail: z.string().nullable().describe("Why the component is not operational."),
  checked_at: timestamp.nullable(),
  uptime_90d: z
    .number()
    .min(0)
    .max(100)
    .nullable()
    .describe(
      "Percentage of recorded checks that found it operational over the last 90 days; null before any.",
    ),
  days: z
    .array(z.strictObject({ day: z.iso.date(), ok: z.number().int(), total: z.number().int() }))
    .describe("Checks per UTC day: ok of total found the component operational."),
  latency_ms: percentilesSchema,
});

export const statusReportSchema = z.strictObject({
  status: z.enum(["operational", "degraded"]),
  history_available: z
    .boolean()
    .describe(
      "false when the shared store could not be read: states are this process's own, with no history, and the incidents are as this process last read them (incidents.as_of).",
    ),
  updated_at: timestamp,
  check_interval_ms: z.number().int(),
  components: z.array(componentReportSchema),
  incidents: z.strictObject({
    active: z.array(incidentViewSchema),
    recent: z.array(incidentViewSchema).describe("Resolved incidents, newest first, at most 20."),
    as_of: timestamp
      .nullable()
      .describe(
        "When these incidents were read from the shared store: updated_at, or while it cannot be read (history_available false) this process's last read, so they may be out of date; null when this process has not read them yet (none shown).",
      ),
  }),
});

export type Percentiles = z.infer<typeof percentilesSchema>;
export type ComponentReport = z.infer<typeof componentReportSchema>;
export type IncidentView = z.infer<typeof incidentViewSchema>;
export type StatusReport = z.infer<typeof statusReportSchema>;
