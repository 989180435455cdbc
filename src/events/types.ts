import { z } from "zod";

/**
 * The account events of the specification, typed once. Every producer builds its record
 * through `eventRecord`, and the webhook dispatcher re-validates before sending, so a
 * malformed event never leaves the service.
 */
/**
 * The exact amount in USD as a decimal string: at least two decimals ("19.00"), more when the
 * amount has them, up to USDC's six ("0.002" for a one-credit call) — never rounded.
 */
const usd = z.string().regex(/^\d+\.\d{2,6}$/, "a decimal amount with two to six decimals");

export const EVENT_DATA = {
  "payment.received": z.object({
    type: z.enum(["one_time", "subscription", "renewal"]),
    credits_added: z.number().int().nonnegative(),
    amount_usd: usd,
    plan: z.string().nullable(),
    agent_id: z.string(),
    payment_session_id: z.string(),
    /** The same amount in USDC atomic units (6 decimals). */
    amount_usdc_atomic: z.string().optional(),
    network: z.string().optional(),
    transaction: z.string().optional(),
  }),
  "credits.low": z.object({
    credits_remaining: z.number().int().nonnegative(),
    tool_name: z.string().nullable(),
    /** The credit level whose crossing fired the alert: 20% of the balance after the last top-up. */
    threshold: z.number().int().nonnegative(),
  }),
  "credits.depleted": z.object({
    credits_remaining: z.literal(0),
    tool_name: z.string().nullable(),
    message: z.string(),
  }),
  "agent.registered": z.object({
    agent_id: z.string(),
    email: z.string().nullable(),
    tier: z.string(),
  }),
  "tool.error": z.object({
    tool_name: z.string(),
    credits_charged: z.number().int().nonnegative(),
    error_code: z.string().optional(),
    request_id: z.string().optional(),
  }),
  /**
   * Account controls: the month's spend (credits kept by calls, net of refunds) reached the
   * account's spend alert; once per calendar month (UTC), re-armed when the alert is set again.
   */
  "spend.threshold_reached": z.object({
    threshold: z.number().int().positive(),
    spent: z.number().int().nonnegative(),
    period: z.literal("month"),
    period_start: z.iso.datetime({ precision: 3 }),
    tool_name: z.string().nullable(),
  }),
  /** Sent by POST /api/v1/webhooks/test, whatever a webhook subscribed to. */
  "webhook.test": z.object({
    webhook_id: z.string(),
    message: z.string(),
  }),
} as const;

export type EventType = keyof typeof EVENT_DATA;
export const EVENT_TYPES = Object.keys(EVENT_DATA) as EventType[];
/** What a platform webhook can subscribe to: every event (the test event is sent on request). */
export const SUBSCRIBABLE_EVENTS = EVENT_TYPES.filter((e) => e !== "webhook.test") as Exclude<
  EventType,
  "webhook.test"
>[];
/**
 * What an account's webhook can subscribe to: its own events. `agent.registered` goes to platform
 * webhooks only (an account's own fires when it is created, before it can have a webhook).
 */
export const ACCOUNT_EVENTS = SUBSCRIBABLE_EVENTS.filter((e) => e !== "agent.registered");
export type EventData<T extends EventType> = z.infer<(typeof EVENT_DATA)[T]>;

export const eventRecordSchema = z.object({
  id: z.string().regex(/^evt_[0-9a-z]+$/),
  event: z.enum(EVENT_TYPES as [EventType, ...EventType[]]),
  timestamp: z.iso.datetime({ precision: 3 }),
  account_id: z.string(),
  data: z.record(z.string(), z.unknown()),
});
export type EventRecord = z.infer<typeof eventRecordSchema>;

export function parseEventRecord(raw: unknown): EventRecord {
  const record = eventRecordSchema.parse(raw);
  EVENT_DATA[record.event].parse(record.data);
  return record;
}

export function eventRecord<T extends EventType>(
  id: string,
  event: T,
  accountId: string,
  data: EventData<T>,
  at: Date = new Date(),
): EventRecord {
  return parseEventRecord({ id, event, timestamp: at.toISOString(), account_id: accountId, data });
}

export const DEPLETED_MESSAGE =
  "Your credit balance has reached zero. Buy credits or pay per call with x402 to continue.";
