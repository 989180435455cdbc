import { z } from "zod";
import { requireFeature } from "../../../accounts/tiers.js";
import { ApiError } from "../../../http/errors.js";
import { keepIfCredentialHolds, requireCredentialHolds } from "../../../http/auth.js";
import { defineRoute } from "../../../http/route.js";
import { SchemaError } from "../json-schema.js";
import { customToolBody, customToolRecord } from "../spec.js";
import { checkUpstreamUrl } from "../target.js";
import { newWebhookSecret, sealSecret } from "../../../webhooks/secrets.js";
import { customToolView, customToolViewSchema } from "./view.js";

/**
 * POST /api/v1/custom-tools: a Business account turns its own endpoint into a private tool,
 * called by its keys at /v1/tools/{name} (REST and MCP) on the same paid call path as the
 * catalogue. Checked before it is kept: the name is free, both schemas compile, the URL passes
 * the SSRF guard now (and is checked again on every call).
 */
export const createCustomTool = defineRoute({
  method: "post",
  path: "/custom-tools",
  summary:
    "Register the account's own HTTPS endpoint as a private tool: name, description, input/output JSON Schema, price in credits, timeout (Business tier).",
  auth: "key",
  limit: "custom-tool-register",
  // Where the account's calls (and their inputs) go: a limited key may call tools, not move them.
  unrestrictedKey: true,
  errors: ["feature_not_in_tier", "tool_name_taken"],
  successStatus: 201,
  body: customToolBody,
  response: customToolViewSchema.extend({
    signing_secret: z
      .string()
      .describe(
        "Shown once. Every call to the endpoint is signed with it in the Standard Webhooks headers (webhook-id: the call's request id, webhook-timestamp, webhook-signature): verify them to know a call is the gateway's.",
      ),
  }),
  async handler({ services, caller, body }) {
    requireFeature(caller.account.tier, "custom_endpoints");
    if (services.upstream.isTaken(body.name))
      throw new ApiError(
        "tool_name_taken",
        `${body.name} is the name of a public tool; choose another.`,
        { param: "name" },
      );
    for (const [param, schema] of [
      ["input_schema", body.input_schema],
      ["output_schema", body.output_schema],
    ] as const) {
      if (schema === undefined) continue;
      try {
        services.upstream.schemas.check(schema);
      } catch (err) {
        if (err instanceof SchemaError)
          throw new ApiError(
            "validation_failed",
            `Invalid body field "${param}": ${err.message}.`,
            { param },
          );
        throw err;
      }
    }
    const target = await checkUpstreamUrl(body.url, services.config.upstream.allowPrivate);
    if (!target.ok)
      throw new ApiError(
        "validation_failed",
        `The endpoint URL is not allowed: ${target.reason}.`,
        { param: "url" },
      );
    // The Standard Webhooks form, as a webhook's secret: any Standard Webhooks library verifies the calls.
    const signingSecret = newWebhookSecret();
    const record = customToolRecord(
      caller.account.id,
      body,
      target.url.href,
      sealSecret(services.config.secretKeys, signingSecret),
    );
    // The endpoint's check above waits on DNS, which the endpoint's owner may answer slowly.
    await requireCredentialHolds(services, caller);
    const added = await services.store.addCustomTool(record, services.config.upstream.perAccount);
    if (added === "exists")
      throw new ApiError(
        "tool_name_taken",
        `The account already has a tool named ${body.name}; delete it first to replace it.`,
        { param: "name" },
      );
    if (added === "cap")
      throw new ApiError(
        "validation_failed",
        `At most ${services.config.upstream.perAccount} custom tools per account.`,
      );
    // A take-back of the account (dashboard/reclaim.ts) while this ran must not leave it a way in.
    await keepIfCredentialHolds(services, caller, () =>
      services.store.deleteCustomTool(caller.account.id, record.name),
    );
    return {
      status: 201,
      body: {
        ...customToolView(record, services.config.creditPriceAtomic),
        signing_secret: signingSecret,
      },
    };
  },
});
