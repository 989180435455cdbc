import { z } from "zod";
import { ApiError } from "../../http/errors.js";
import { defineRoute } from "../../http/route.js";
import { isExpired, isRevoked } from "../../store/types.js";
import { keyControlFields, keyControlsFrom } from "../key-controls.js";
import { keyView, keyViewSchema } from "../views.js";
import { alreadyRevoked, keyName } from "./keys.js";

/**
 * Changes a key's name and account controls (expiry, allowed tools, budget): a field sent
 * replaces the key's, null removes it, one left out stays. Effective on the key's next call, on
 * every gateway process (the admission script reads them). Another account's key is not found; a
 * revoked one is "already revoked", as revoking or rotating it says.
 */
export const updateKey = defineRoute({
  method: "patch",
  path: "/keys/:id",
  summary:
    "Change a key's name and account controls (expires_at, allowed_tools, budget; null removes one), effective on its next call. A control on the account's last active key (the last that can manage keys) is refused (409 last_active_key).",
  auth: "key",
  unrestrictedKey: true,
  errors: ["unknown_tool_name", "last_active_key"],
  body: z.strictObject({ name: keyName.nullable().optional(), ...keyControlFields }),
  response: keyViewSchema,
  async handler({ services, caller, params, body }) {
    const accountId = caller.account.id;
    const current = await services.store.getKey(accountId, params.id!);
    if (!current) throw new ApiError("not_found", "No such key.", { param: "id" });
    if (isRevoked(current)) throw alreadyRevoked();
    const { name, ...controls } = body;
    // An expired key stays expired: a new expiry (or none) would lift the limit its expiry set, as
    // rotating it would (refused there too). Its name may still change.
    if (isExpired(current) && Object.values(controls).some((value) => value !== undefined))
      throw new ApiError(
        "validation_failed",
        `The key expired at ${new Date(current.expiresAt).toISOString()}: an expired key's controls cannot be changed. Create a new key instead.`,
        { param: "id" },
      );
    const update = await keyControlsFrom(services, accountId, controls);
    if (name !== undefined) update.name = name;
    // No force here: a control set on the last active key would leave no key that can manage
    // keys, and DELETE ?force=true is the one deliberate way to give that up.
    const outcome = await services.store.updateKey(accountId, current.id, update, {
      keepOneActive: true,
    });
    switch (outcome.status) {
      case "not_found":
        throw new ApiError("not_found", "No such key.", { param: "id" });
      case "last_active_key":
        throw new ApiError(
          "last_active_key",
          "This is the account's last active key (no revocation scheduled, no expiry, allowed_tools or budget): with a control it could no longer manage keys, locking the account out. Create another key without controls first.",
          { param: "id" },
        );
      case "updated":
        return { body: keyView(outcome.key) };
    }
  },
});
