/** `client.account`, `client.keys`, `client.usage`: the account API under /api/v1. */
import { type CursorPage, pagePromise, type PagePromise } from "../pagination.js";
import { segment, type Transport } from "../transport.js";
import type { Account as AccountRecord, BodyOf, QueryOf, ResponseOf } from "../types.js";

export type EventsPage = ResponseOf<"getEvents">;
export type UsagePage = ResponseOf<"getUsage">;

/** A cursor-paged GET: each page asked for with `query`, its cursor the page's own (the first: `query.cursor`). */
function pagedGet<P extends CursorPage<unknown>>(
  transport: Transport,
  path: string,
  query: { cursor?: string },
): PagePromise<P> {
  return pagePromise(
    async (cursor) =>
      (
        await transport.request({
          method: "GET",
          path,
          query: { ...query, cursor: cursor ?? query.cursor },
          idempotent: true,
        })
      ).data as P,
  );
}

export class Account {
  constructor(private readonly transport: Transport) {}

  /** `GET /api/v1/account`: tier, credits, limits and features of the key's account. */
  async get(): Promise<AccountRecord> {
    return (
      await this.transport.request({ method: "GET", path: "/api/v1/account", idempotent: true })
    ).data as AccountRecord;
  }

  /**
   * `GET /api/v1/events`: the account's events, newest first. Awaited, one page: pass its
   * `next_cursor` as `cursor` for the next. In `for await`, every event of every page, each page
   * asked for when the one before is used up, with the same filters. `type` keeps one event type;
   * `from`/`to` are ISO 8601 times; `limit` is the page size.
   * (Python: `client.account.events()` / `events_page()` / `iter_events()`.)
   */
  events(query: QueryOf<"getEvents"> = {}): PagePromise<EventsPage> {
    return pagedGet<EventsPage>(this.transport, "/api/v1/events", query);
  }

  /** `PUT /api/v1/account/spend-alert`: `spend.threshold_reached` fires once a month when the month's spend reaches `credits`. */
  async setSpendAlert(credits: number): Promise<AccountRecord> {
    return (
      await this.transport.request({
        method: "PUT",
        path: "/api/v1/account/spend-alert",
        body: { credits },
      })
    ).data as AccountRecord;
  }

  /** `DELETE /api/v1/account/spend-alert`: removes the spend alert. */
  async removeSpendAlert(): Promise<AccountRecord> {
    return (
      await this.transport.request({
        method: "DELETE",
        path: "/api/v1/account/spend-alert",
        // Not repeated after a lost answer: the gateway answers a second removal 404.
      })
    ).data as AccountRecord;
  }
}

export class Keys {
  constructor(private readonly transport: Transport) {}

  /** `GET /api/v1/keys`: every key of the account (prefix and last four characters only). */
  async list(): Promise<ResponseOf<"getKeys">> {
    return (await this.transport.request({ method: "GET", path: "/api/v1/keys", idempotent: true }))
      .data as ResponseOf<"getKeys">;
  }

  /** `POST /api/v1/keys`: another key; the answer is the only time its secret is shown. */
  async create(
    body: BodyOf<"postKeys"> = {} as BodyOf<"postKeys">,
  ): Promise<ResponseOf<"postKeys">> {
    return (await this.transport.request({ method: "POST", path: "/api/v1/keys", body }))
      .data as ResponseOf<"postKeys">;
  }

  /** `POST /api/v1/keys/{id}/rotate`: a new key now; the old one is revoked after `grace_seconds` (0 = at once). */
  async rotate(
    id: string,
    body: BodyOf<"postKeysIdRotate"> = {} as BodyOf<"postKeysIdRotate">,
  ): Promise<ResponseOf<"postKeysIdRotate">> {
    return (
      await this.transport.request({
        method: "POST",
        path: `/api/v1/keys/${segment(id)}/rotate`,
        body,
      })
    ).data as ResponseOf<"postKeysIdRotate">;
  }

  /**
   * `PATCH /api/v1/keys/{id}`: changes the key's name and account controls (`expires_at`,
   * `allowed_tools`, `budget`); a field set to null removes that control.
   */
  async update(id: string, body: BodyOf<"patchKeysId">): Promise<ResponseOf<"patchKeysId">> {
    return (
      await this.transport.request({
        method: "PATCH",
        path: `/api/v1/keys/${segment(id)}`,
        body,
      })
    ).data as ResponseOf<"patchKeysId">;
  }

  /**
   * `DELETE /api/v1/keys/{id}`: revokes the key at once. The account's last active key is kept
   * (409 `last_active_key`) unless `force` is true.
   */
  async revoke(id: string, options: { force?: boolean } = {}): Promise<ResponseOf<"deleteKeysId">> {
    return (
      await this.transport.request({
        method: "DELETE",
        path: `/api/v1/keys/${segment(id)}`,
        query: { force: options.force ? "true" : undefined },
        // Not repeated after a lost answer: the gateway answers a second revoke 404.
      })
    ).data as ResponseOf<"deleteKeysId">;
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
    return pagedGet<UsagePage>(this.transport, "/api/v1/usage", query);
  }

  /**
   * `GET /api/v1/analytics` (Pro and Business): calls, credits, errors and p50/p95 latency per
   * UTC hour or day, optionally split by tool, key or status. `from`/`to` are ISO 8601 times.
   */
  async analytics(
    query: {
      from?: string;
      to?: string;
      granularity?: "hour" | "day";
      group_by?: "tool" | "key" | "status";
    } = {},
  ): Promise<ResponseOf<"getAnalytics">> {
    return (
      await this.transport.request({
        method: "GET",
        path: "/api/v1/analytics",
        query,
        idempotent: true,
      })
    ).data as ResponseOf<"getAnalytics">;
  }

  /** @deprecated The account's events are `client.account.events()`, as in the Python library. */
  events(query: QueryOf<"getEvents"> = {}): PagePromise<EventsPage> {
    return pagedGet<EventsPage>(this.transport, "/api/v1/events", query);
  }
}
