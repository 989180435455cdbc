import { createHash } from "node:crypto";
import { z } from "zod";
import { ApiError } from "../http/errors.js";
import { idempotencyKeyOf, idempotencyKeyParameter } from "../http/idempotency-key.js";
import { defineRoute } from "../http/route.js";
import { randomId } from "../lib/ids.js";
import { StoreUnavailableError } from "../store/errors.js";
import {
  readableLine,
  NO_CONTROL_CHARACTERS_BUT_LINES,
  hasNoncharacter,
} from "../lib/readable-text.js";
import { incidentView } from "./report.js";
import { incidentViewSchema } from "./report-schema.js";
import type { Incident, IncidentUpdate } from "./store.js";

/**
 * The operator's incidents (admin key): open one, post updates, resolve it. They show on
 * /status, /status.json and /status.rss.
 */
const status = z.enum(["investigating", "identified", "monitoring"]);
// Shown on /status, /status.json and /status.rss as written: an ESC, a BEL or a U+FFFE went out
// raw (lib/readable-text.ts). A message keeps its line feeds and tabs (the page shows each message
// on one line, where they read as spaces; /status.json keeps them); a title is one line.
const message = z
  .string()
  .trim()
  .min(1)
  .max(2000)
  .regex(
    NO_CONTROL_CHARACTERS_BUT_LINES,
    "A message cannot contain control characters other than line feeds and tabs, nor invisible formatting characters (such as a right-to-left override)",
  )
  .refine((m) => !hasNoncharacter(m), "A message cannot contain noncharacters");
const title = readableLine("A title", 200).refine(
  (t) => !hasNoncharacter(t),
  "A title cannot contain noncharacters",
);

const keyDigest = (idempotencyKey: string) =>
  createHash("sha256").update(idempotencyKey).digest("hex").slice(0, 16);

/** What a repeat answered under its Idempotency-Key says, as a tool call's replay does. */
const REPLAYED = { "Idempotent-Replayed": "true" };
const replayedHeader = {
  "Idempotent-Replayed": {
    schema: { type: "string", enum: ["true"] },
    description: "This Idempotency-Key was honoured already: the answer is the one it made.",
  },
};

/** What the operator sent to open an incident, to tell a retry from another opening under the same key. */
const openingOf = (incident: Incident) =>
  JSON.stringify([
    incident.title,
    incident.impact,
    incident.components,
    incident.updates[0]?.status,
    incident.updates[0]?.message,
  ]);

export const createIncident = defineRoute({
  method: "post",
  path: "/admin/incidents",
  summary:
    "Open an incident on the status page, with its first message. With an Idempotency-Key header, a retry opens it once; the same key with another body is 409.",
  auth: "admin",
  errors: ["idempotency_conflict"],
  requestHeaders: [
    idempotencyKeyParameter(
      "Same key and body within IDEMPOTENCY_TTL_SECONDS (24 h by default) of the opening: opened once, a repeat answers 200 with the incident as kept; the same key with another body is 409. Past that time the key opens a new incident.",
    ),
  ],
  successStatus: 201,
  alsoSucceeds: {
    status: 200,
    description:
      "This Idempotency-Key opened the incident already (`Idempotent-Replayed: true`): nothing opened again.",
  },
  successHeaders: replayedHeader,
  body: z.strictObject({
    title,
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
  async handler({ services, body, req }) {
    const idempotencyKey = idempotencyKeyOf(req);
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
      // Each once: the page and the feed would name a component twice.
      components: [...new Set(body.components)],
      createdAt: now,
      resolvedAt: null,
      updates: [{ status: body.status, message: body.message, at: now }],
    };
    // The key names the incident it opened for as long as any Idempotency-Key is kept: a retry
    // (after a 503 whose write still landed, or a lost answer) is that incident, and an alerting
    // hook keying its openings by alert group opens a new one for an outage days later.
    const idempotency = idempotencyKey
      ? { key: keyDigest(idempotencyKey), ttlSeconds: services.config.idempotencyTtlSeconds }
      : undefined;
    const kept = await services.status.store
      .saveIncident(incident, idempotency)
      .catch((err: unknown) => {
        if (!(err instanceof StoreUnavailableError)) throw err;
        // A command that met its deadline unanswered may still run once Redis answers again.
        throw new ApiError(
          "store_unavailable",
          "The status store did not answer: the incident may still be opened once it does. Retry with the same Idempotency-Key header to open it only once.",
          { headers: { "Retry-After": "1" } },
        );
      });
    services.status.incidentsChanged();
    if (!kept) return { status: 201, body: incidentView(incident) };
    if (openingOf(kept) !== openingOf(incident))
      throw new ApiError(
        "idempotency_conflict",
        "This Idempotency-Key opened another incident (another title, impact, components, status or message).",
        { param: "Idempotency-Key" },
      );
    return { status: 200, body: incidentView(kept), headers: REPLAYED };
  },
});

export const updateIncident = defineRoute({
  method: "post",
  path: "/admin/incidents/:id/updates",
  summary:
    "Post an update to an open incident. With an Idempotency-Key header, a retry posts it once; the same key with another body is 409.",
  auth: "admin",
  errors: ["idempotency_conflict"],
  requestHeaders: [
    idempotencyKeyParameter(
      "Same key and body: posted once, a repeat answers the incident as kept (`Idempotent-Replayed: true`); the same key with another body is 409.",
    ),
  ],
  successHeaders: replayedHeader,
  body: z.strictObject({ status, message }),
  response: incidentViewSchema,
  async handler({ services, params, body, req }) {
    const idempotencyKey = idempotencyKeyOf(req);
    const key = idempotencyKey ? keyDigest(idempotencyKey) : undefined;
    const update = { status: body.status, message: body.message, at: Date.now(), key };
    // A retry after a 503 whose write still landed, or a lost answer: found, not posted again.
    let posted: IncidentUpdate | undefined;
    // In one store step: an update racing another keeps both, one racing the resolution never
    // writes the incident back unresolved.
    const outcome = await services.status.store.changeIncident(params.id!, (incident) => {
      posted = key ? incident.updates.find((u) => u.key === key) : undefined;
      if (posted || incident.resolvedAt) return null;
      return { ...incident, updates: [...incident.updates, update] };
    });
    if (!outcome) throw new ApiError("not_found", "No such incident.", { param: "id" });
    services.status.incidentsChanged();
    if (posted) {
      if (posted.status !== body.status || posted.message !== body.message)
        throw new ApiError(
          "idempotency_conflict",
          "This Idempotency-Key posted another update (another status or message).",
          { param: "Idempotency-Key" },
        );
      return { body: incidentView(outcome.incident), headers: REPLAYED };
    }
    if (!outcome.changed)
      throw new ApiError("validation_failed", "The incident is resolved; open a new one.", {
        param: "id",
      });
    return { body: incidentView(outcome.incident) };
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
    const at = Date.now();
    const outcome = await services.status.store.changeIncident(params.id!, (incident) =>
      incident.resolvedAt
        ? null
        : {
            ...incident,
            resolvedAt: at,
            updates: [...incident.updates, { status: "resolved", message: body.message, at }],
          },
    );
    if (!outcome) throw new ApiError("not_found", "No such incident.", { param: "id" });
    services.status.incidentsChanged();
    return { body: incidentView(outcome.incident) };
  },
});

export const incidentRoutes = [createIncident, updateIncident, resolveIncident];
