import { z } from "zod";
import { ApiError } from "../../http/errors.js";
import { defineRoute, type RouteContext } from "../../http/route.js";
import type { AccountRecord } from "../../store/types.js";
import { checkDedicatedWorkersUrl, dedicatedOrigin } from "../../tools/dedicated-workers.js";
import { requireFeature } from "../tiers.js";
import { accountIdParam } from "./admin.js";

/**
 * Dedicated workers (Business), an operator's endpoints: bind an account to its own worker pool,
 * see the binding, unbind it. Effective on the account's next call (the binding travels with the
 * account record the admission reads; see src/tools/dedicated-workers.ts).
 */
const bindingView = z.object({
  account_id: z.string(),
  url: z
    .string()
    .nullable()
    .describe("The origin of the account's own worker pool; null: the shared pools."),
  active: z
    .boolean()
    .describe(
      "Calls go to this pool now: it is bound and the account's tier includes dedicated workers.",
    ),
});

const view = (account: AccountRecord): z.infer<typeof bindingView> => ({
  account_id: account.id,
  url: account.dedicatedWorkersUrl,
  active: dedicatedOrigin(account) !== null,
});

const accountIdOf = (ctx: RouteContext<unknown, unknown, "admin">) => accountIdParam(ctx.params.id);

const noSuchAccount = () => new ApiError("not_found", "No such account.", { param: "id" });

export const adminGetWorkers = defineRoute({
  method: "get",
  path: "/admin/accounts/:id/workers",
  summary: "The account's dedicated worker pool, if it is bound to one.",
  auth: "admin",
  response: bindingView,
  async handler(ctx) {
    const account = await ctx.services.store.getAccount(accountIdOf(ctx));
    if (!account) throw noSuchAccount();
    return { body: view(account) };
  },
});

export const adminBindWorkers = defineRoute({
  method: "put",
  path: "/admin/accounts/:id/workers",
  summary:
    "Bind a Business account to its own worker pool: all its tool calls go there and nowhere else, from its next call.",
  auth: "admin",
  body: z.strictObject({
    url: z.string().max(2048).describe("The pool's origin, e.g. https://workers.acme.example:8500"),
  }),
  response: bindingView,
  async handler(ctx) {
    const { services, body } = ctx;
    const id = accountIdOf(ctx);
    const account = await services.store.getAccount(id);
    if (!account) throw noSuchAccount();
    requireFeature(account.tier, "dedicated_workers");
    const checked = await checkDedicatedWorkersUrl(
      body.url,
      services.config.dedicatedWorkersAllowPrivateTargets,
    );
    if (!checked.ok)
      throw new ApiError(
        "validation_failed",
        `This worker pool URL cannot be used: ${checked.reason}.`,
        { param: "url" },
      );
    const bound = await services.store.setDedicatedWorkers(id, checked.origin);
    if (!bound) throw noSuchAccount();
    services.log.info({ account_id: id, url: checked.origin }, "dedicated workers bound");
    return { body: view(bound) };
  },
});

export const adminUnbindWorkers = defineRoute({
  method: "delete",
  path: "/admin/accounts/:id/workers",
  summary:
    "Unbind the account's dedicated worker pool: its calls go to the shared pools again, from its next call. 404 when no pool is bound (already unbound, or never bound).",
  auth: "admin",
  response: bindingView,
  async handler(ctx) {
    const id = accountIdOf(ctx);
    // One rule for every DELETE (README, "Deleting twice"): a binding already removed, or never
    // made, is gone for writes, as a revoked key is. The store decides it in the unbind itself:
    // of two DELETEs at once, one unbinds and the other is 404, as a DELETE after it is.
    const outcome = await ctx.services.store.unbindDedicatedWorkers(id);
    switch (outcome.status) {
      case "not_found":
        throw noSuchAccount();
      case "not_bound":
        throw new ApiError("not_found", "This account has no dedicated worker pool bound.", {
          param: "id",
        });
      case "unbound":
        ctx.services.log.info({ account_id: id }, "dedicated workers unbound");
        return { body: view(outcome.account) };
    }
  },
});
