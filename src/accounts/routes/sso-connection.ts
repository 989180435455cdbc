import { z } from "zod";
import { ApiError } from "../../http/errors.js";
import { keepIfCredentialHolds, requireCredentialHolds } from "../../http/auth.js";
import { defineRoute } from "../../http/route.js";
import { openSecret, sealSecret } from "../../webhooks/secrets.js";
import {
  MAX_SSO_DOMAINS,
  checkIssuerUrl,
  emailDomainSchema,
  ssoConnectionView,
  ssoConnectionViewSchema,
} from "../sso/connection.js";
import { discoverProvider, providerFailure } from "../sso/provider.js";
import { requireFeature } from "../tiers.js";

/**
 * GET, PUT and DELETE /api/v1/account/sso: the account's single sign-on connection (Business).
 * Saving checks the issuer against the SSRF guard and reads its OpenID configuration at once, so
 * a mistyped issuer is refused here rather than at someone's first sign-in.
 */
const NOT_SET_UP = "Single sign-on is not set up for this account.";
const clientSecretRequired = () =>
  new ApiError("validation_failed", "client_secret is required to set up SSO.", {
    param: "client_secret",
  });

export const getSsoConnection = defineRoute({
  method: "get",
  path: "/account/sso",
  summary:
    "The account's single sign-on (OpenID Connect) connection; the client secret shows only as set (Business tier).",
  auth: "key",
  errors: ["feature_not_in_tier"],
  response: ssoConnectionViewSchema,
  async handler({ services, caller }) {
    requireFeature(caller.account.tier, "sso");
    const record = await services.store.getSsoConnection(caller.account.id);
    if (!record) throw new ApiError("not_found", NOT_SET_UP);
    return { body: ssoConnectionView(services, record) };
  },
});

export const putSsoConnection = defineRoute({
  method: "put",
  path: "/account/sso",
  summary:
    "Set up or change single sign-on with the account's OpenID Connect provider: issuer, client, and the e-mail domains that may sign in (Business tier).",
  auth: "key",
  // Single sign-on opens dashboard sessions, which manage keys: a limited key would lift its own limits.
  unrestrictedKey: true,
  errors: ["feature_not_in_tier", "sso_domain_taken"],
  body: z.strictObject({
    issuer: z.string().trim().min(1).max(2048),
    client_id: z.string().trim().min(1).max(255),
    client_secret: z
      .string()
      .min(1)
      .max(1024)
      .optional()
      .describe("Required the first time; omitted later, the stored secret is kept."),
    email_domains: z
      .array(emailDomainSchema)
      .min(1)
      .max(MAX_SSO_DOMAINS)
      .refine((d) => new Set(d).size === d.length, "email_domains must not repeat"),
  }),
  response: ssoConnectionViewSchema,
  async handler({ services, caller, body }) {
    requireFeature(caller.account.tier, "sso");
    const accountId = caller.account.id;
    const allowPrivate = services.config.ssoAllowPrivateTargets;
    const issuer = await checkIssuerUrl(body.issuer, allowPrivate);
    if (!issuer.ok)
      throw new ApiError("validation_failed", `The issuer URL is not allowed: ${issuer.reason}.`, {
        param: "issuer",
      });
    const existing = await services.store.getSsoConnection(accountId);
    if (!body.client_secret && !existing) throw clientSecretRequired();
    const clientSecret =
      body.client_secret ?? openSecret(services.config.secretKeys, existing!.sealedClientSecret);
    try {
      const provider = await discoverProvider(
        { issuer: body.issuer, clientId: body.client_id, clientSecret },
        allowPrivate,
      );
      await provider.close();
    } catch (err) {
      const failure = providerFailure(err);
      if (!failure) throw err;
      throw new ApiError(
        "validation_failed",
        `The issuer's OpenID Connect configuration could not be read: ${failure.reason}.`,
        { param: "issuer" },
      );
    }
    // The discovery above takes as long as the caller's provider likes.
    await requireCredentialHolds(services, caller);
    const now = Date.now();
    // Without a new secret the store keeps the one it holds as it saves, not the one read above:
    // a connection deleted meanwhile is not brought back with it (and the save is refused, as
    // after the delete).
    const saved = await services.store.putSsoConnection({
      accountId,
      issuer: body.issuer,
      clientId: body.client_id,
      sealedClientSecret: body.client_secret
        ? sealSecret(services.config.secretKeys, body.client_secret)
        : null,
      emailDomains: body.email_domains,
      createdAt: now,
      updatedAt: now,
    });
    if (saved.status === "not_set_up") throw clientSecretRequired();
    if (saved.status === "domain_taken")
      throw new ApiError(
        "sso_domain_taken",
        `${saved.domain} is already used for single sign-on by another account.`,
        { param: "email_domains" },
      );
    // A take-back of the account (dashboard/reclaim.ts) during the provider's discovery, which
    // the caller's provider can make last, must not leave the caller a way back in.
    await keepIfCredentialHolds(services, caller, () =>
      services.store.deleteSsoConnection(accountId),
    );
    return { body: ssoConnectionView(services, saved.connection) };
  },
});

export const deleteSsoConnection = defineRoute({
  method: "delete",
  path: "/account/sso",
  summary:
    "Turn single sign-on off: the connection and its client secret are deleted, its e-mail domains released (Business tier).",
  auth: "key",
  // Single sign-on opens dashboard sessions, which manage keys: a limited key would lift its own limits.
  unrestrictedKey: true,
  errors: ["feature_not_in_tier"],
  response: z.object({ deleted: z.literal(true) }),
  async handler({ services, caller }) {
    requireFeature(caller.account.tier, "sso");
    if (!(await services.store.deleteSsoConnection(caller.account.id)))
      throw new ApiError("not_found", NOT_SET_UP);
    return { body: { deleted: true as const } };
  },
});
