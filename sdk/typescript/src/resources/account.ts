/** `client.account`, `client.keys`, `client.usage`: the account API under /api/v1. */
import { type CursorPage, pagePromise, type PagePromise } from "../pagination.js";
import { FIELDS, listOf, record } from "../shape.js";
import { segment, type Transport } from "../transport.js";
import type { Account as AccountRecord, BodyOf, QueryOf, ResponseOf } from "../types.js";

export type EventsPage = ResponseOf<"getEvents">;
export type UsagePage = ResponseOf<"getUsage">;

/** A cursor-paged GET: each page asked for with `query`, its cursor the page's own (the first: `query.cursor`). */
function pagedGet<P extends CursorPage<unknown>>(
  transport: Transport,
  path: string,
  query: { cursor?: string },
  fields: readonly string[],
): PagePromise<P> {
  return pagePromise(
    async (cursor) =>
      listOf<P>(
        await transport.request({
          method: "GET",
          path,
          query: { ...query, cursor: cursor ?? query.cursor },
          idempotent: true,
        }),
        fields,
      ),
    query.cursor,
  );
}

export class Account {
  constructor(private readonly transport: Transport) {}

  /** `GET /api/v1/account`: tier, credits, limits and features of the key's account. */
  async get(): Promise<AccountRecord> {
    return record<AccountRecord>(
      await this.transport.request({ method: "GET", path: "/api/v1/account", idempotent: true }),
      FIELDS.account,
    );
  }

  /**
   * `GET /api/v1/events`: the account's events, newest first. Awaited, one page: pass its
   * `next_cursor` as `cursor` for the next. In `for await`, every event of every page, each page
   * asked for when the one before is used up, with the same filters. `type` keeps one event type;
   * `from`/`to` are ISO 8601 times; `limit` is the page size.
   * (Python: `client.account.events()` / `events_page()` / `iter_events()`.)
   */
  events(query: QueryOf<"getEvents"> = {}): PagePromise<EventsPage> {
    return pagedGet<EventsPage>(this.transport, "/api/v1/events", query, FIELDS.event);
  }

  /** `PUT /api/v1/account/spend-alert`: `spend.threshold_reached` fires once a month when the month's spend reaches `credits`. */
  async setSpendAlert(credits: number): Promise<AccountRecord> {
    return record<AccountRecord>(
      await this.transport.request({
        method: "PUT",
        path: "/api/v1/account/spend-alert",
        body: { credits },
      }),
      FIELDS.account,
    );
  }

  /** `DELETE /api/v1/account/spend-alert`: removes the spend alert. */
  async removeSpendAlert(): Promise<AccountRecord> {
    return record<AccountRecord>(
      await this.transport.request({
        method: "DELETE",
        path: "/api/v1/account/spend-alert",
        // Not repeated after a lost answer: the gateway answers a second removal 404.
      }),
      FIELDS.account,
    );
  }
}

export class Keys {
  constructor(private readonly transport: Transport) {}

  /** `GET /api/v1/keys`: every key of the account (prefix and last four characters only). */
  async list(): Promise<ResponseOf<"getKeys">> {
    return listOf<ResponseOf<"getKeys">>(
      await this.transport.request({ method: "GET", path: "/api/v1/keys", idempotent: true }),
      FIELDS.apiKey,
    );
  }

  /** `POST /api/v1/keys`: another key; the answer is the only time its secret is shown. */
  async create(
    body: BodyOf<"postKeys"> = {} as BodyOf<"postKeys">,
  ): Promise<ResponseOf<"postKeys">> {
    return record<ResponseOf<"postKeys">>(
      await this.transport.request({ method: "POST", path: "/api/v1/keys", body }),
      FIELDS.createdKey,
    );
  }

  /** `POST /api/v1/keys/{id}/rotate`: a new key now; the old one is revoked after `grace_seconds` (0 = at once). */
  async rotate(
    id: string,
    body: BodyOf<"postKeysIdRotate"> = {} as BodyOf<"postKeysIdRotate">,
  ): Promise<ResponseOf<"postKeysIdRotate">> {
    return record<ResponseOf<"postKeysIdRotate">>(
      await this.transport.request({
        method: "POST",
        path: `/api/v1/keys/${segment(id)}/rotate`,
        body,
      }),
      FIELDS.createdKey,
    );
  }

  /**
   * `PATCH /api/v1/keys/{id}`: changes the key's name and account controls (`expires_at`,
   * `allowed_tools`, `budget`); a field set to null removes that control. A control on the
   * account's last active key (the last one without controls) is refused, 409 `last_active_key`.
   */
  async update(id: string, body: BodyOf<"patchKeysId">): Promise<ResponseOf<"patchKeysId">> {
    return record<ResponseOf<"patchKeysId">>(
      await this.transport.request({
        method: "PATCH",
        path: `/api/v1/keys/${segment(id)}`,
        body,
      }),
      FIELDS.apiKey,
    );
  }

  /**
   * `DELETE /api/v1/keys/{id}`: revokes the key at once. The account's last active key (the last
   * one without controls, which alone can manage keys) is kept
   * (409 `last_active_key`) unless `force` is true.
   */
  async revoke(
    id: string,
    options: { force?: boolean | undefined } = {},
  ): Promise<ResponseOf<"deleteKeysId">> {
    return record<ResponseOf<"deleteKeysId">>(
      await this.transport.request({
        method: "DELETE",
        path: `/api/v1/keys/${segment(id)}`,
        query: { force: options.force ? "true" : undefined },
        // Not repeated after a lost answer: the gateway answers a second revoke 404.
      }),
      FIELDS.apiKey,
    );
  }
}

export class Usage {
  constructor(private readonly transport: Transport) {}

  /**
   * `GET /api/v1/usage`: ledger entries, newest first. Awaited, one page: pass its `next_cursor`
   * as `cursor` for the next. In `for await`, every entry of every page, each page asked for when
   * the one before is used up, with the same filters. `tool`, `key` (a key id) and `kind` keep
   * those entries; `from` (inclusive) and `to` are ISO 8601 times; `limit` is the page size.
   * (Python: `client.usage.list()` / `iter_entries()`.)
   */
  list(query: Omit<QueryOf<"getUsage">, "format"> = {}): PagePromise<UsagePage> {
    return pagedGet<UsagePage>(this.transport, "/api/v1/usage", query, FIELDS.ledgerEntry);
  }

  /**
   * `GET /api/v1/analytics` (Pro and Business): calls, credits, errors and p50/p95 latency per
   * UTC hour or day, optionally split by tool, key or status. `from`/`to` are ISO 8601 times.
   */
  async analytics(
    query: {
      from?: string | undefined;
      to?: string | undefined;
      granularity?: "hour" | "day" | undefined;
      group_by?: "tool" | "key" | "status" | undefined;
    } = {},
  ): Promise<ResponseOf<"getAnalytics">> {
    return listOf<ResponseOf<"getAnalytics">>(
      await this.transport.request({
        method: "GET",
        path: "/api/v1/analytics",
        query,
        idempotent: true,
      }),
      FIELDS.analyticsRow,
    );
  }

  /** @deprecated The account's events are `client.account.events()`, as in the Python library. */
  events(query: QueryOf<"getEvents"> = {}): PagePromise<EventsPage> {
    return pagedGet<EventsPage>(this.transport, "/api/v1/events", query, FIELDS.event);
  }
}
