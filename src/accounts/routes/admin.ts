import { z } from "zod";
import { ApiError } from "../../http/errors.js";
import { defineRoute } from "../../http/route.js";
import { idempotencyKeyOf, idempotencyKeyParameter } from "../../http/idempotency-key.js";
import { ACCOUNT_ID_PATTERN } from "../../lib/ids.js";
import { readableLine } from "../../lib/readable-text.js";
import { issueKey } from "../accounts.js";
import { accountView, accountViewSchema, issuedKeyViewSchema, keyView, listOf } from "../views.js";
import { keyName } from "./keys.js";
import { TIER_NAMES } from "../tiers.js";
import { pageOf, pageQuery } from "./usage.js";

/** Operator endpoints, behind ADMIN_API_KEY. */
export function accountIdParam(id: string | undefined): string {
  if (!id || !ACCOUNT_ID_PATTERN.test(id))
    throw new ApiError("not_found", "No such account.", { param: "id" });
  return id;
}

export const adminListAccounts = defineRoute({
  method: "get",
  path: "/admin/accounts",
  summary: "Every account, oldest first, paginated.",
  auth: "admin",
  query: pageQuery,
  errors: ["invalid_cursor"],
  response: listOf(accountViewSchema),
  async handler({ services, query }) {
    const page = await pageOf(services.store.listAccounts(query));
    return {
      body: { object: "list", data: page.items.map(accountView), next_cursor: page.nextCursor },
    };
  },
});

export const adminSetTier = defineRoute({
  method: "put",
  path: "/admin/accounts/:id/tier",
  summary: "Change an account's tier; effective on its next request.",
  auth: "admin",
  body: z.strictObject({ tier: z.enum(TIER_NAMES) }),
  response: accountViewSchema,
  async handler({ services, params, body }) {
    const account = await services.store.setTier(accountIdParam(params.id), body.tier);
    if (!account) throw new ApiError("not_found", "No such account.", { param: "id" });
    return { body: accountView(account) };
  },
});

export const adminGrantCredits = defineRoute({
  method: "post",
  path: "/admin/accounts/:id/credits",
  summary:
    "Grant credits to an account. With an Idempotency-Key header, a retry is applied once; the same key with another body is 409.",
  auth: "admin",
  errors: ["idempotency_conflict"],
  requestHeaders: [
    idempotencyKeyParameter(
      "Same key and body: applied once, a repeat answers 200 `applied: false`; the same key with another body is 409.",
    ),
  ],
  successStatus: 201,
  alsoSucceeds: {
    status: 200,
    description:
      "This Idempotency-Key was applied already: nothing granted again (`applied: false`).",
  },
  response: z.object({
    applied: z
      .boolean()
      .describe("false when this Idempotency-Key was already applied (status 200)."),
    account: accountViewSchema,
  }),
  body: z.strictObject({
    amount: z.number().int().min(1).max(1_000_000_000),
    // Shown in the account's usage (JSON and CSV) and the dashboard: readable text only.
    reason: readableLine("A reason", 200),
  }),
  async handler({ services, params, body, req, requestId }) {
    const accountId = accountIdParam(params.id);
    const idempotencyKey = idempotencyKeyOf(req);
    if (idempotencyKey) {
      // The first body sent under the key is the grant's: another body under it is a mistake to
      // say out loud (a 200 "already applied" hid that its credits were never granted). Kept for
      // good, as a grant's request id is: operators' grants are few.
      const fingerprint = JSON.stringify([body.amount, body.reason]);
      const first = await services.store.keepFirst(
        `admin-grant:${accountId}:${idempotencyKey}`,
        fingerprint,
      );
      if (first !== fingerprint)
        throw new ApiError(
          "idempotency_conflict",
          "This Idempotency-Key was used for a grant with another amount or reason.",
          { param: "Idempotency-Key" },
        );
    }
    const result = await services.store.topUp(accountId, "grant", {
      amount: body.amount,
      reason: body.reason,
      requestId: idempotencyKey ? `admin-grant:${idempotencyKey}` : requestId,
      // As long as the key's first body is kept: a retry however late is still the same grant
      // (a top-up's request id is otherwise kept a day, and a retry after it granted again).
      keptForGood: Boolean(idempotencyKey),
    });
    if (!result) throw new ApiError("not_found", "No such account.", { param: "id" });
    return {
      status: result.applied ? 201 : 200,
      body: { applied: result.applied, account: accountView(result.account) },
    };
  },
});

export const adminIssueKey = defineRoute({
  method: "post",
  path: "/admin/accounts/:id/keys",
  summary:
    "Issue a new API key for an account, e.g. one that revoked its last key. The full key is in this answer only.",
  auth: "admin",
  successStatus: 201,
  body: z.strictObject({ name: keyName.optional() }),
  response: issuedKeyViewSchema,
  async handler({ services, params, body }) {
    const accountId = accountIdParam(params.id);
    if (!(await services.store.getAccount(accountId)))
      throw new ApiError("not_found", "No such account.", { param: "id" });
    const { plaintext, key } = await issueKey(
      services,
      accountId,
      body.name ?? "issued by the operator",
    );
    return { status: 201, body: { ...keyView(key), key: plaintext } };
  },
});
