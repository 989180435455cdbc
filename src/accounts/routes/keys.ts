import { z } from "zod";
import { ApiError } from "../../http/errors.js";
import { readableLine } from "../../lib/readable-text.js";
import { keepIfCredentialHolds } from "../../http/auth.js";
import { defineRoute } from "../../http/route.js";
import { isExpired, isRevoked, type KeyRecord } from "../../store/types.js";
import { issueKey, issueKeyWithinCap, keyCapReached } from "../accounts.js";
import { keyControlFields, keyControlsFrom } from "../key-controls.js";
import { issuedKeyViewSchema, keyView, keyViewSchema, listOf } from "../views.js";

/**
 * Key management for the calling account. Another account's key id is simply not found. A key
 * with account controls manages no keys (403 `unrestricted_key_required`): it could otherwise
 * lift its own limits or issue itself a key without them.
 */
// Shown in the dashboard, the CLI's tables and logs: a NUL, an escape sequence or a right-to-left
// override in a name was stored and printed as it came (lib/readable-text.ts).
export const keyName = readableLine("A key name", 64);

export const listKeys = defineRoute({
  method: "get",
  path: "/keys",
  summary: "The account's API keys: prefix and last four characters only.",
  auth: "key",
  response: listOf(keyViewSchema),
  async handler({ services, caller }) {
    const keys = await services.store.listKeys(caller.account.id);
    return { body: { object: "list", data: keys.map((k) => keyView(k)) } };
  },
});

export const createKey = defineRoute({
  method: "post",
  path: "/keys",
  summary:
    "Create another API key, optionally with account controls (expiry, allowed tools, budget); the full key is in this response only.",
  auth: "key",
  unrestrictedKey: true,
  errors: ["unknown_tool_name"],
  body: z.strictObject({ name: keyName.optional(), ...keyControlFields }),
  successStatus: 201,
  response: issuedKeyViewSchema,
  async handler({ services, caller, body }) {
    // The store checks the cap in the step that adds the key: a count here and an add after it
    // let racing requests each pass the count, and the account end beyond its cap.
    const cap = services.config.keysPerAccount;
    const { name, ...controls } = body;
    const issued = await issueKeyWithinCap(
      services,
      caller.account.id,
      name ?? null,
      await keyControlsFrom(services, caller.account.id, controls),
      cap,
    );
    if (!issued) throw keyCapReached(cap, "revoke one first.");
    const { plaintext, key } = issued;
    // A take-back of the account (dashboard/reclaim.ts) while this ran must not leave it a way in.
    await keepIfCredentialHolds(services, caller, () =>
      services.store.revokeKey(caller.account.id, key.id, 0),
    );
    return { status: 201, body: { ...keyView(key), key: plaintext } };
  },
});

/** A revoked key is answered alike by every key route: 404, as any resource deleted before. */
export const alreadyRevoked = () =>
  new ApiError("not_found", "The key is already revoked.", { param: "id" });

const MAX_GRACE_SECONDS = 7 * 24 * 3600;

/** 409 `key_already_rotated`: a key is replaced once, or two replacements would both work. */
function alreadyRotated(key: KeyRecord): ApiError {
  const by = key.replacedBy ? ` by ${key.replacedBy}` : "";
  const until = new Date(key.revokedAt!).toISOString();
  // A key regenerated (or whose grace has ended) works no more: nothing is left to revoke.
  const message = isRevoked(key)
    ? `The key was already replaced${by} and stopped working at ${until}. Rotate the new key instead.`
    : `The key is already being replaced${by}; it works until ${until}. Rotate the new key instead, or revoke this one now.`;
  return new ApiError("key_already_rotated", message, { param: "id" });
}

export const rotateKey = defineRoute({
  method: "post",
  path: "/keys/:id/rotate",
  summary:
    "Replace a key: a new key now, with the old one's account controls; the old one stops at once (grace_seconds 0: regenerate) or after the grace period.",
  auth: "key",
  unrestrictedKey: true,
  errors: ["key_already_rotated"],
  successStatus: 201,
  response: keyViewSchema.extend({
    key: z.string().describe("The new key: shown in this answer only."),
    replaced: keyViewSchema.nullable(),
  }),
  body: z.strictObject({
    grace_seconds: z.number().int().min(0).max(MAX_GRACE_SECONDS).default(0),
    name: keyName.optional(),
  }),
  async handler({ services, caller, body, params }) {
    const accountId = caller.account.id;
    const old = await services.store.getKey(accountId, params.id!);
    if (!old) throw new ApiError("not_found", "No such key.", { param: "id" });
    // A key rotated once is answered so, whether its grace still runs or it has none.
    if (old.replacedBy) throw alreadyRotated(old);
    if (isRevoked(old)) throw alreadyRevoked();
    if (old.revokedAt !== null) throw alreadyRotated(old);
    // The replacement keeps the old key's expiry, so an expired key's would be born expired; a
    // new expiry would lift the limit the old key had. A new key is created instead, as with a
    // past expires_at (422).
    if (isExpired(old))
      throw new ApiError(
        "validation_failed",
        `The key expired at ${new Date(old.expiresAt).toISOString()}: an expired key cannot be rotated. Create a new key instead.`,
        { param: "id" },
      );
    // The replacement keeps the old key's controls: rotating never lifts a limit.
    const name = body.name ?? old.name;
    const controls = {
      expiresAt: old.expiresAt ?? null,
      allowedTools: old.allowedTools ?? null,
      budget: old.budget ?? null,
    };
    // During a grace period the old key works beside the new one, so the new one needs a place
    // under the cap: else rotating each replacement in turn gave an account any number of working
    // keys. Without one, the new key takes the old one's place.
    const cap = services.config.keysPerAccount;
    const issued =
      body.grace_seconds > 0
        ? await issueKeyWithinCap(services, accountId, name, controls, cap)
        : await issueKey(services, accountId, name, undefined, controls);
    if (!issued)
      throw keyCapReached(
        cap,
        "a key in its grace period counts until it ends. Rotate with grace_seconds 0, or revoke a key first.",
      );
    const { plaintext, key } = issued;
    const rotated = await services.store.revokeKey(accountId, old.id, body.grace_seconds * 1000, {
      replacedBy: key.id,
    });
    if (rotated.status === "already_rotated" || rotated.status === "already_revoked") {
      // Another rotation (or a revocation) got there first: the key issued here was never shown,
      // and goes. A rotation without a grace period revokes at once, so a rotation racing it
      // finds the key revoked, not rotating: it answered 201 and left two replacements working.
      await services.store.revokeKey(accountId, key.id, 0);
      throw rotated.key.replacedBy ? alreadyRotated(rotated.key) : alreadyRevoked();
    }
    // A take-back of the account (dashboard/reclaim.ts) while this ran must not leave it a way
    // in. Rotating the very key the request came with, at once, ends that credential here, not
    // the take-back: had the take-back revoked it first, this rotation was refused just above.
    if (!(caller.keyId === old.id && body.grace_seconds === 0))
      await keepIfCredentialHolds(services, caller, () =>
        services.store.revokeKey(accountId, key.id, 0),
      );
    return {
      status: 201,
      body: {
        ...keyView(key),
        key: plaintext,
        replaced: rotated.status === "not_found" ? null : keyView(rotated.key),
      },
    };
  },
});

export const revokeKey = defineRoute({
  method: "delete",
  path: "/keys/:id",
  summary:
    "Revoke a key, effective on the very next request on every gateway process. The account's last active key (the last one with no revocation scheduled and no controls, i.e. that can manage keys) is kept (409 last_active_key) unless force=true; a key already revoked is not found (404), like any resource deleted before.",
  auth: "key",
  unrestrictedKey: true,
  errors: ["last_active_key"],
  query: z.strictObject({
    force: z
      .enum(["true", "false"])
      .default("false")
      .describe("true: revoke even the last active key, leaving the account without one."),
  }),
  response: keyViewSchema,
  async handler({ services, caller, params, query }) {
    const outcome = await services.store.revokeKey(caller.account.id, params.id!, 0, {
      keepOneActive: query.force !== "true",
    });
    switch (outcome.status) {
      case "not_found":
        throw new ApiError("not_found", "No such key.", { param: "id" });
      case "already_revoked":
        throw alreadyRevoked();
      case "last_active_key":
        throw new ApiError(
          "last_active_key",
          "This is the account's last active key (no revocation scheduled, no expiry, allowed_tools or budget): revoking it would leave no key that can manage keys, locking the account out. Create another key without controls first, or send force=true.",
          {
            param: "id",
          },
        );
      case "revoked":
      case "already_rotated": // answers a rotation only (replacedBy), never asked here
        return { body: keyView(outcome.key) };
    }
  },
});
