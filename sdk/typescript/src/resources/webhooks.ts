/** `client.webhooks`: webhook management under /api/v1/webhooks (a Pro feature). */
import { segment, type Transport } from "../transport.js";
import type { BodyOf, ResponseOf } from "../types.js";

const at = (id: string) => `/api/v1/webhooks/${segment(id)}`;

export class Webhooks {
  constructor(private readonly transport: Transport) {}

  /** Registers an HTTPS endpoint for event types; the answer carries the signing secret, shown only this once. */
  async register(
    body: BodyOf<"postWebhooksRegister">,
  ): Promise<ResponseOf<"postWebhooksRegister">> {
    return (
      await this.transport.request({ method: "POST", path: "/api/v1/webhooks/register", body })
    ).data as ResponseOf<"postWebhooksRegister">;
  }

  async list(): Promise<ResponseOf<"getWebhooks">> {
    return (
      await this.transport.request({ method: "GET", path: "/api/v1/webhooks", idempotent: true })
    ).data as ResponseOf<"getWebhooks">;
  }

  async delete(id: string): Promise<ResponseOf<"deleteWebhooksId">> {
    // Not repeated after a lost answer: the gateway answers a second delete 404.
    return (await this.transport.request({ method: "DELETE", path: at(id) }))
      .data as ResponseOf<"deleteWebhooksId">;
  }

  /**
   * Sends a `webhook.test` event to one webhook (its id, as Python's `webhooks.test(webhook_id)`,
   * or `{ webhook_id }`), or to all of the account's when none is named.
   */
  async test(
    webhook: string | BodyOf<"postWebhooksTest"> = {} as BodyOf<"postWebhooksTest">,
  ): Promise<ResponseOf<"postWebhooksTest">> {
    const body = typeof webhook === "string" ? { webhook_id: webhook } : webhook;
    return (await this.transport.request({ method: "POST", path: "/api/v1/webhooks/test", body }))
      .data as ResponseOf<"postWebhooksTest">;
  }

  /** A new secret; the old one keeps signing `webhook-signature` for `overlap_seconds`. */
  async rotateSecret(
    id: string,
    body: BodyOf<"postWebhooksIdRotatesecret"> = {} as BodyOf<"postWebhooksIdRotatesecret">,
  ): Promise<ResponseOf<"postWebhooksIdRotatesecret">> {
    return (await this.transport.request({ method: "POST", path: `${at(id)}/rotate-secret`, body }))
      .data as ResponseOf<"postWebhooksIdRotatesecret">;
  }

  /** The webhook's recent delivery attempts. */
  async deliveries(id: string): Promise<ResponseOf<"getWebhooksIdDeliveries">> {
    return (
      await this.transport.request({
        method: "GET",
        path: `${at(id)}/deliveries`,
        idempotent: true,
      })
    ).data as ResponseOf<"getWebhooksIdDeliveries">;
  }

  /** Queues one logged event for delivery again. */
  async resend(
    id: string,
    eventId: string,
  ): Promise<ResponseOf<"postWebhooksIdDeliveriesEventidResend">> {
    return (
      await this.transport.request({
        method: "POST",
        path: `${at(id)}/deliveries/${segment(eventId)}/resend`,
      })
    ).data as ResponseOf<"postWebhooksIdDeliveriesEventidResend">;
  }
}
