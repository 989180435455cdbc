/** `client.webhooks`: webhook management under /api/v1/webhooks (a Pro feature). */
import { FIELDS, listOf, record } from "../shape.js";
import { segment, type Transport } from "../transport.js";
import type { BodyOf, ResponseOf } from "../types.js";

const at = (id: string) => `/api/v1/webhooks/${segment(id)}`;

export class Webhooks {
  constructor(private readonly transport: Transport) {}

  /** Registers an HTTPS endpoint for event types; the answer carries the signing secret, shown only this once. */
  async register(
    body: BodyOf<"postWebhooksRegister">,
  ): Promise<ResponseOf<"postWebhooksRegister">> {
    return record<ResponseOf<"postWebhooksRegister">>(
      await this.transport.request({ method: "POST", path: "/api/v1/webhooks/register", body }),
      FIELDS.webhook,
    );
  }

  async list(): Promise<ResponseOf<"getWebhooks">> {
    return listOf<ResponseOf<"getWebhooks">>(
      await this.transport.request({ method: "GET", path: "/api/v1/webhooks", idempotent: true }),
      FIELDS.webhook,
    );
  }

  async delete(id: string): Promise<ResponseOf<"deleteWebhooksId">> {
    // Not repeated after a lost answer: the gateway answers a second delete 404.
    return record<ResponseOf<"deleteWebhooksId">>(
      await this.transport.request({ method: "DELETE", path: at(id) }),
      FIELDS.none,
    );
  }

  /**
   * Sends a `webhook.test` event to one webhook (its id, as Python's `webhooks.test(webhook_id)`,
   * or `{ webhook_id }`), or to all of the account's when none is named.
   */
  async test(
    webhook: string | BodyOf<"postWebhooksTest"> = {} as BodyOf<"postWebhooksTest">,
  ): Promise<ResponseOf<"postWebhooksTest">> {
    const body = typeof webhook === "string" ? { webhook_id: webhook } : webhook;
    return listOf<ResponseOf<"postWebhooksTest">>(
      await this.transport.request({ method: "POST", path: "/api/v1/webhooks/test", body }),
      FIELDS.sentTest,
      "sent",
    );
  }

  /** A new secret; the old one keeps signing `webhook-signature` for `overlap_seconds`. */
  async rotateSecret(
    id: string,
    body: BodyOf<"postWebhooksIdRotatesecret"> = {} as BodyOf<"postWebhooksIdRotatesecret">,
  ): Promise<ResponseOf<"postWebhooksIdRotatesecret">> {
    return record<ResponseOf<"postWebhooksIdRotatesecret">>(
      await this.transport.request({ method: "POST", path: `${at(id)}/rotate-secret`, body }),
      FIELDS.webhook,
    );
  }

  /** The webhook's recent delivery attempts. */
  async deliveries(id: string): Promise<ResponseOf<"getWebhooksIdDeliveries">> {
    return listOf<ResponseOf<"getWebhooksIdDeliveries">>(
      await this.transport.request({
        method: "GET",
        path: `${at(id)}/deliveries`,
        idempotent: true,
      }),
      FIELDS.delivery,
    );
  }

  /** Queues one logged event for delivery again. */
  async resend(
    id: string,
    eventId: string,
  ): Promise<ResponseOf<"postWebhooksIdDeliveriesEventidResend">> {
    return record<ResponseOf<"postWebhooksIdDeliveriesEventidResend">>(
      await this.transport.request({
        method: "POST",
        path: `${at(id)}/deliveries/${segment(eventId)}/resend`,
      }),
      FIELDS.sentTest,
    );
  }
}
