import { z } from "zod";
import { ApiError } from "../http/errors.js";
import { defineRoute } from "../http/route.js";
import { randomId } from "../lib/ids.js";
import type { Services } from "../services.js";
import { incidentView } from "./report.js";
import { incidentViewSchema } from "./report-schema.js";
import type { Incident } from "./store.js";

/**
 * The operator's incidents (admin key): open one, post updates, resolve it. They show on
 * /status, /status.json and /status.rss.
 */
const status = z.enum(["investigating", "identified", "monitoring"]);
const message = z.string().trim().min(1).max(2000);

async function findIncident(services: Services, id: string): Promise<Incident> {
  const incident = await services.status.store.getIncident(id);
  if (!incident) throw new ApiError("not_found", "No such incident.", { param: "id" });
  return incident;
}

export const createIncident = defineRoute({
  method: "post",
  path: "/admin/incidents",
  summary: "Open an incident on the status page, with its first message.",
  auth: "admin",
  successStatus: 201,
  body: z.strictObject({
    title: z.string().trim().min(1).max(200),
    message,
    impact: z.enum(["minor", "major"]).default("minor"),
    status: status.default("investigating"),
    components: z
      .array(z.string().max(100))
      .max(50)
      .default([])
      .describe("Ids of the affected components, as in /status.json."),
  }),
  response: incidentViewSchema,
  async handler({ services, body }) {
    const known = new Set((await services.status.report()).components.map((c) => c.id));
    const unknown = body.components.find((c) => !known.has(c));
    if (unknown)
      throw new ApiError(
        "validation_failed",
        `Unknown component "${unknown}"; see /status.json for the ids.`,
        { param: "components" },
      );
    const now = Date.now();
    const incident: Incident = {
      id: `inc_${randomId(16)}`,
      title: body.title,
      impact: body.impact,
      components: body.components,
      createdAt: now,
      resolvedAt: null,
      updates: [{ status: body.status, message: body.message, at: now }],
    };
    await services.status.store.saveIncident(incident);
    return { status: 201, body: incidentView(incident) };
  },
});

export const updateIncident = defineRoute({
  method: "post",
  path: "/admin/incidents/:id/updates",
  summary: "Post an update to an open incident.",
  auth: "admin",
  body: z.strictObject({ status, message }),
  response: incidentViewSchema,
  async handler({ services, params, body }) {
    const incident = await findIncident(services, params.id!);
    if (incident.resolvedAt)
      throw new ApiError("validation_failed", "The incident is resolved; open a new one.", {
        param: "id",
      });
    incident.updates.push({ status: body.status, message: body.message, at: Date.now() });
    await services.status.store.saveIncident(incident);
    return { body: incidentView(incident) };
  },
});

export const resolveIncident = defineRoute({
  method: "post",
  path: "/admin/incidents/:id/resolve",
  summary: "Resolve an incident, with a closing message. Resolving twice changes nothing.",
  auth: "admin",
  body: z.strictObject({ message: message.default("This incident has been resolved.") }),
  response: incidentViewSchema,
  async handler({ services, params, body }) {
    const incident = await findIncident(services, params.id!);
    if (!incident.resolvedAt) {
      incident.resolvedAt = Date.now();
      incident.updates.push({ status: "resolved", message: body.message, at: incident.resolvedAt });
      await services.status.store.saveIncident(incident);
    }
    return { body: incidentView(incident) };
  },
});

export const incidentRoutes = [createIncident, updateIncident, resolveIncident];
