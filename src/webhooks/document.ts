import { z } from "zod";
import { EVENT_DATA, type EventType } from "../events/types.js";
import { withoutDialect } from "../tools/views.js";
import { USER_AGENT } from "./deliver.js";

type Json = Record<string, unknown>;

/**
 * The deliveries as the OpenAPI document's `webhooks` (OpenAPI 3.1): one POST per event type,
 * its body the envelope with that event's `data`, from the same zod schemas the dispatcher checks
 * every event against before sending it, so what a receiver is told cannot drift from what it
 * gets. Without it the document said only that `data` is an object, and no page said what a
 * `credits.low`, `credits.depleted`, `tool.error` or `agent.registered` carries.
 */
export function webhooksDocument(): Record<string, Json> {
  return Object.fromEntries(
    (Object.keys(EVENT_DATA) as EventType[]).map((event) => [event, { post: delivery(event) }]),
  );
}

const header = (name: string, description: string, schema: Json = { type: "string" }) => ({
  name,
  in: "header",
  required: true,
  description,
  schema,
});

const HEADERS = [
  header("X-Webhook-Id", "The event's id (the body's `id`): drop duplicates by it."),
  header("X-Webhook-Event", "The event type (the body's `event`)."),
  header("X-Webhook-Timestamp", "The event's time (the body's `timestamp`), ISO 8601."),
  header(
    "X-Webhook-Signature",
    "`sha256=<lowercase hex HMAC-SHA256 of the raw body, keyed by the whole whsec_… secret>`.",
    { type: "string", pattern: "^sha256=[0-9a-f]{64}$" },
  ),
  header("webhook-id", "Standard Webhooks: the event's id."),
  header("webhook-timestamp", "Standard Webhooks: the attempt's time, in Unix seconds.", {
    type: "string",
    pattern: "^[0-9]+$",
  }),
  header(
    "webhook-signature",
    "Standard Webhooks: `v1,<base64 HMAC-SHA256 of id.timestamp.body, keyed by the secret's decoded bytes>`, space-separated, one per secret while a rotation overlaps.",
  ),
  header("User-Agent", USER_AGENT, { type: "string", const: USER_AGENT }),
];

function delivery(event: EventType): Json {
  return {
    tags: ["Webhooks"],
    operationId: `webhook${event.replace(/(^|[._])(\w)/g, (_m, _s, c: string) => c.toUpperCase())}`,
    summary: `The ${event} event, POSTed to each webhook subscribed to it${event === "webhook.test" ? " (sent by POST /api/v1/webhooks/test, whatever it subscribed to)" : ""}.`,
    security: [],
    parameters: HEADERS,
    requestBody: {
      required: true,
      content: {
        "application/json": {
          schema: {
            type: "object",
            required: ["id", "event", "timestamp", "data"],
            properties: {
              id: { type: "string", pattern: "^evt_[0-9a-z]+$" },
              event: { type: "string", const: event },
              timestamp: { type: "string", format: "date-time" },
              data: withoutDialect(
                z.toJSONSchema(EVENT_DATA[event], { io: "output", unrepresentable: "any" }),
              ),
            },
            additionalProperties: false,
          },
        },
      },
    },
    responses: {
      "200": {
        description:
          "Any 2xx within 10 s: delivered (the body is ignored). Otherwise retried at most 3 times, 1 s, 4 s and 9 s after each failure; a 4xx other than 429 is not retried, nor is a redirect followed.",
      },
    },
  };
}
