import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REVOKED_KEYS_KEPT } from "../../src/store/keys/revoked-kept.js";
import { admin, call, signUp, startGateway, type TestGateway } from "../helpers/gateway.js";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(() => gw.stop());

const keys = (key: string) => call(`${gw.url}/api/v1/keys`, { key });
const me = (key: string) => call(`${gw.url}/api/v1/account`, { key });

describe("API keys", () => {
  it("lists keys by prefix and last four characters, never the key or its hash", async () => {
    const { key, keyId } = await signUp(gw.url);
    const res = await keys(key);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([
      {
        id: keyId,
        name: "default",
        prefix: key.slice(0, 29),
        last4: key.slice(-4),
        status: "active",
        created_at: expect.any(String),
        revoked_at: null,
        last_used_at: expect.any(String),
        expires_at: null,
        allowed_tools: null,
        budget: null,
      },
    ]);
    expect(JSON.stringify(res.body)).not.toContain(key.slice(29, -4));
  });

  it("creates another key that works beside the first; the key is shown once", async () => {
    const { key } = await signUp(gw.url);
    const created = await call(`${gw.url}/api/v1/keys`, { key, body: { name: "ci" } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: "ci",
      status: "active",
      key: expect.stringMatching(/^tg_live_/),
    });
    expect((await me(created.body.key)).status).toBe(200);
    expect((await me(key)).status).toBe(200);
    expect((await keys(key)).body.data.map((k: { key?: string }) => k.key)).toEqual([
      undefined,
      undefined,
    ]);
  });

  it("regenerates a key: the new key works and the old one fails on the very next request", async () => {
    const { key, keyId } = await signUp(gw.url);
    const rotated = await call(`${gw.url}/api/v1/keys/${keyId}/rotate`, { key, method: "POST" });
    expect(rotated.status).toBe(201);
    expect(rotated.body.replaced).toMatchObject({ id: keyId, status: "revoked" });
    const old = await me(key);
    expect([old.status, old.body.error.code]).toEqual([401, "api_key_revoked"]);
    expect((await me(rotated.body.key)).status).toBe(200);
  });

  it("rotates with a grace period: the old key works until it ends", async () => {
    const { key, keyId } = await signUp(gw.url);
    const rotated = await call(`${gw.url}/api/v1/keys/${keyId}/rotate`, {
      key,
      body: { grace_seconds: 1 },
    });
    expect(rotated.body.replaced).toMatchObject({ id: keyId, status: "expiring" });
    expect((await me(key)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await me(key)).body.error.code).toBe("api_key_revoked");
    expect((await me(rotated.body.key)).status).toBe(200);
  });

  it("lists the 100 most recently revoked keys, however often a key is regenerated; an older one is then unknown (401 invalid_api_key)", async () => {
    const { accountId, key: first, keyId } = await signUp(gw.url);
    // Pro: 300 requests a minute, so the 101 rotations below are not rate limited.
    await admin(gw.url, `/accounts/${accountId}/tier`, { method: "PUT", body: { tier: "pro" } });
    let current = { key: first, id: keyId };
    let firstReplacement = "";
    for (let i = 0; i <= REVOKED_KEYS_KEPT; i++) {
      const rotated = await call(`${gw.url}/api/v1/keys/${current.id}/rotate`, {
        key: current.key,
        method: "POST",
      });
      expect(rotated.status).toBe(201);
      current = { key: rotated.body.key, id: rotated.body.id };
      if (i === 0) firstReplacement = rotated.body.key;
    }
    const listed = (await keys(current.key)).body.data as { id: string; status: string }[];
    expect(listed.filter((k) => k.status === "revoked")).toHaveLength(REVOKED_KEYS_KEPT);
    expect(listed.filter((k) => k.status === "active").map((k) => k.id)).toEqual([current.id]);
    expect(listed.map((k) => k.id)).not.toContain(keyId);
    const forgotten = await me(first);
    expect([forgotten.status, forgotten.body.error.code]).toEqual([401, "invalid_api_key"]);
    const kept = await me(firstReplacement);
    expect([kept.status, kept.body.error.code]).toEqual([401, "api_key_revoked"]);
    expect((await me(current.key)).status).toBe(200);
  });

  it("rotates a key once: another rotation while its grace runs, even one racing it, is 409 key_already_rotated naming the new key", async () => {
    const { key } = await signUp(gw.url);
    const svc = (await call(`${gw.url}/api/v1/keys`, { key, body: { name: "svc" } })).body;
    const rotate = () =>
      call(`${gw.url}/api/v1/keys/${svc.id}/rotate`, { key, body: { grace_seconds: 3600 } });
    const race = await Promise.all([rotate(), rotate()]);
    expect(race.map((r) => r.status).sort()).toEqual([201, 409]);
    const winner = race.find((r) => r.status === 201)!.body;
    for (const refused of [race.find((r) => r.status === 409)!, await rotate()]) {
      expect(refused.body.error).toMatchObject({ code: "key_already_rotated", param: "id" });
      expect(refused.body.error.message).toContain(winner.id);
    }
    const listed = (await keys(key)).body.data as { id: string; name: string; status: string }[];
    expect(
      listed.filter((k) => k.name === "svc" && k.status !== "revoked").map((k) => [k.id, k.status]),
    ).toEqual([
      [svc.id, "expiring"],
      [winner.id, "active"],
    ]);
  });

  it("rotates a key once when rotations without a grace period race it: one replacement works, the others are refused", async () => {
    const { key } = await signUp(gw.url);
    for (const graces of [
      [0, 0],
      [0, 3600],
      [3600, 0],
      [0, 0, 0],
    ]) {
      const svc = (await call(`${gw.url}/api/v1/keys`, { key, body: { name: "svc" } })).body;
      const race = await Promise.all(
        graces.map((grace) =>
          call(`${gw.url}/api/v1/keys/${svc.id}/rotate`, { key, body: { grace_seconds: grace } }),
        ),
      );
      expect(
        race.filter((r) => r.status === 201),
        JSON.stringify(graces),
      ).toHaveLength(1);
      for (const refused of race.filter((r) => r.status !== 201))
        expect(refused.body.error.code).toBe("key_already_rotated");
      // Replaced at once: the refusal says it no longer works, not to revoke it (that is a 404).
      if (graces.every((grace) => grace === 0)) {
        const again = await call(`${gw.url}/api/v1/keys/${svc.id}/rotate`, { key, body: {} });
        expect(again.body.error.message).toMatch(
          /stopped working at .*Rotate the new key instead\.$/,
        );
      }
      const working = await Promise.all(
        race.filter((r) => r.status === 201).map((r) => me(r.body.key)),
      );
      expect(working.map((r) => r.status)).toEqual([200]);
      const listed = (await keys(key)).body.data as { name: string; status: string }[];
      expect(listed.filter((k) => k.name === "svc" && k.status === "active")).toHaveLength(1);
      // Each round's surviving key goes, so the next round starts from one "svc".
      const survivor = race.find((r) => r.status === 201)!.body;
      await call(`${gw.url}/api/v1/keys/${survivor.id}`, { key, method: "DELETE" });
      if (graces.includes(3600))
        await call(`${gw.url}/api/v1/keys/${svc.id}`, { key, method: "DELETE" });
    }
  });

  it("answers a change to a revoked key as revoking or rotating it does: already revoked", async () => {
    const { key } = await signUp(gw.url);
    const second = (await call(`${gw.url}/api/v1/keys`, { key, body: {} })).body;
    await call(`${gw.url}/api/v1/keys/${second.id}`, { key, method: "DELETE" });
    const answers = await Promise.all([
      call(`${gw.url}/api/v1/keys/${second.id}`, { key, method: "PATCH", body: { name: "x" } }),
      call(`${gw.url}/api/v1/keys/${second.id}`, { key, method: "DELETE" }),
      call(`${gw.url}/api/v1/keys/${second.id}/rotate`, { key, body: {} }),
    ]);
    expect(answers.map((r) => [r.status, r.body.error.code, r.body.error.message])).toEqual(
      Array(3).fill([404, "not_found", "The key is already revoked."]),
    );
  });

  it("shows when each key was last used, and never for a key not yet used", async () => {
    const { key } = await signUp(gw.url);
    const unused = (await call(`${gw.url}/api/v1/keys`, { key, body: { name: "unused" } })).body;
    const before = Date.now();
    await me(key);
    const listed = (await keys(key)).body.data as { id: string; last_used_at: string | null }[];
    const used = Date.parse(listed.find((k) => k.id !== unused.id)!.last_used_at!);
    expect(used).toBeGreaterThan(before - 60_000);
    expect(used).toBeLessThanOrEqual(Date.now() + 1000);
    expect(listed.find((k) => k.id === unused.id)!.last_used_at).toBeNull();
  });

  it("revokes a key immediately; revoking it again is 404, as for any resource deleted before", async () => {
    const { key } = await signUp(gw.url);
    const second = (await call(`${gw.url}/api/v1/keys`, { key, body: {} })).body;
    const revoked = await call(`${gw.url}/api/v1/keys/${second.id}`, { key, method: "DELETE" });
    expect(revoked.body).toMatchObject({ id: second.id, status: "revoked" });
    expect((await me(second.key)).body.error.code).toBe("api_key_revoked");
    const again = await call(`${gw.url}/api/v1/keys/${second.id}`, { key, method: "DELETE" });
    expect([again.status, again.body.error.code, again.body.error.param]).toEqual([
      404,
      "not_found",
      "id",
    ]);
    expect(
      (await keys(key)).body.data.find((k: { id: string }) => k.id === second.id),
    ).toMatchObject({ status: "revoked", revoked_at: revoked.body.revoked_at });
  });

  it("keeps the last active key unless force=true: no accidental lock-out", async () => {
    const { key, keyId } = await signUp(gw.url);
    const refused = await call(`${gw.url}/api/v1/keys/${keyId}`, { key, method: "DELETE" });
    expect([refused.status, refused.body.error.code, refused.body.error.param]).toEqual([
      409,
      "last_active_key",
      "id",
    ]);
    expect((await me(key)).status).toBe(200);
    const bad = await call(`${gw.url}/api/v1/keys/${keyId}?force=yes`, { key, method: "DELETE" });
    expect([bad.status, bad.body.error.param]).toEqual([422, "force"]);
    const forced = await call(`${gw.url}/api/v1/keys/${keyId}?force=true`, {
      key,
      method: "DELETE",
    });
    expect([forced.status, forced.body.status]).toEqual([200, "revoked"]);
    expect((await me(key)).body.error.code).toBe("api_key_revoked");
  });

  it("counts as active only a key that can manage keys: one that expires, even much later, or is limited to tools does not keep the account", async () => {
    for (const controls of [
      { expires_at: new Date(Date.now() + 3000).toISOString() },
      { expires_at: new Date(Date.now() + 30 * 86_400_000).toISOString() },
      { allowed_tools: ["hash"] },
      { budget: { credits: 10, period: "month" } },
    ]) {
      const { key, keyId } = await signUp(gw.url);
      const other = await call(`${gw.url}/api/v1/keys`, { key, body: controls });
      expect(other.status).toBe(201);
      const refused = await call(`${gw.url}/api/v1/keys/${keyId}`, { key, method: "DELETE" });
      expect([refused.status, refused.body.error.code]).toEqual([409, "last_active_key"]);
      expect(refused.body.error.message).toContain("force=true");
      expect((await me(key)).status).toBe(200);
    }
    // Beside another key without controls, it goes.
    const { key, keyId } = await signUp(gw.url);
    const spare = (await call(`${gw.url}/api/v1/keys`, { key, body: {} })).body;
    const revoked = await call(`${gw.url}/api/v1/keys/${keyId}`, { key, method: "DELETE" });
    expect([revoked.status, revoked.body.status]).toEqual([200, "revoked"]);
    expect((await call(`${gw.url}/api/v1/keys`, { key: spare.key, body: {} })).status).toBe(201);
  });

  it("refuses to set an expiry or other control on the last active key (409 last_active_key); its name still changes", async () => {
    const { key, keyId } = await signUp(gw.url);
    const patch = (body: Record<string, unknown>) =>
      call(`${gw.url}/api/v1/keys/${keyId}`, { key, method: "PATCH", body });
    for (const body of [
      { expires_at: new Date(Date.now() + 2000).toISOString() },
      { allowed_tools: ["hash"] },
      { budget: { credits: 10, period: "day" } },
    ]) {
      const refused = await patch(body);
      expect([refused.status, refused.body.error.code, refused.body.error.param]).toEqual([
        409,
        "last_active_key",
        "id",
      ]);
    }
    expect((await keys(key)).body.data[0]).toMatchObject({
      expires_at: null,
      allowed_tools: null,
      budget: null,
    });
    expect((await patch({ name: "main" })).body).toMatchObject({ name: "main", expires_at: null });
    // With another key without controls, this one may be limited.
    await call(`${gw.url}/api/v1/keys`, { key, body: {} });
    const limited = await patch({ allowed_tools: ["hash"] });
    expect([limited.status, limited.body.allowed_tools]).toEqual([200, ["hash"]]);
  });

  it("lets the operator issue a key to an account that revoked its last one; the key is shown once", async () => {
    const { key, keyId, accountId } = await signUp(gw.url);
    await call(`${gw.url}/api/v1/keys/${keyId}?force=true`, { key, method: "DELETE" });
    const issued = await admin(gw.url, `/accounts/${accountId}/keys`, {
      body: { name: "recovery" },
    });
    expect(issued.status).toBe(201);
    expect(issued.body).toMatchObject({
      name: "recovery",
      status: "active",
      last_used_at: null,
      key: expect.stringMatching(/^tg_live_/),
    });
    expect((await me(issued.body.key)).body).toMatchObject({ id: accountId });
    expect(JSON.stringify((await keys(issued.body.key)).body)).not.toContain(issued.body.key);
    // Only the operator, and only for an account that exists.
    expect(
      (
        await call(`${gw.url}/api/v1/admin/accounts/${accountId}/keys`, {
          key: issued.body.key,
          body: {},
        })
      ).body.error.code,
    ).toBe("admin_required");
    expect((await admin(gw.url, "/accounts/acct_0000000000000000/keys", { body: {} })).status).toBe(
      404,
    );
  });

  it("never lets one account see, rotate or revoke another's key", async () => {
    const a = await signUp(gw.url);
    const b = await signUp(gw.url);
    for (const [method, path] of [
      ["DELETE", `/api/v1/keys/${b.keyId}`],
      ["POST", `/api/v1/keys/${b.keyId}/rotate`],
    ] as const) {
      const res = await call(`${gw.url}${path}`, { key: a.key, method });
      expect([res.status, res.body.error.code]).toEqual([404, "not_found"]);
    }
    expect((await me(b.key)).status).toBe(200);
    expect((await keys(b.key)).body.data).toHaveLength(1);
    expect((await keys(a.key)).body.data.map((k: { id: string }) => k.id)).toEqual([a.keyId]);
  });

  it("keeps an expired key expired: changing its controls is refused (422), its name is not", async () => {
    const { key } = await signUp(gw.url);
    const soon = await call(`${gw.url}/api/v1/keys`, {
      key,
      body: { name: "short-lived", expires_at: new Date(Date.now() + 1000).toISOString() },
    });
    await new Promise((r) => setTimeout(r, 1200));
    const patch = (body: unknown) =>
      call(`${gw.url}/api/v1/keys/${soon.body.id}`, { key, method: "PATCH", body });
    for (const body of [{ expires_at: null }, { budget: null }, { allowed_tools: null }]) {
      const res = await patch(body);
      expect([res.status, res.body.error.code, res.body.error.param]).toEqual([
        422,
        "validation_failed",
        "id",
      ]);
    }
    expect((await me(soon.body.key)).body.error.code).toBe("api_key_expired");
    expect((await patch({ name: "was short-lived" })).body.name).toBe("was short-lived");
  });

  it("refuses to rotate an expired key (422): its replacement would be born expired", async () => {
    const { key } = await signUp(gw.url);
    const soon = await call(`${gw.url}/api/v1/keys`, {
      key,
      body: { name: "short-lived", expires_at: new Date(Date.now() + 1000).toISOString() },
    });
    expect(soon.status).toBe(201);
    await new Promise((r) => setTimeout(r, 1200));
    const res = await call(`${gw.url}/api/v1/keys/${soon.body.id}/rotate`, { key, method: "POST" });
    expect([res.status, res.body.error.code, res.body.error.param]).toEqual([
      422,
      "validation_failed",
      "id",
    ]);
    expect(res.body.error.message).toMatch(/expired key cannot be rotated/);
    // Nothing was issued: the account still holds its two keys.
    expect((await keys(key)).body.data).toHaveLength(2);
  });

  it("refuses a JSON body that is not an object (null) with 422, as any other body", async () => {
    const { key } = await signUp(gw.url);
    for (const rawBody of ["null", "[]", '"x"', "1"]) {
      const res = await call(`${gw.url}/api/v1/keys`, { key, rawBody });
      expect([rawBody, res.status, res.body.error.code]).toEqual([
        rawBody,
        422,
        "validation_failed",
      ]);
    }
    // No body at all is still an empty one: a key without a name.
    const empty = await call(`${gw.url}/api/v1/keys`, { key, method: "POST" });
    expect([empty.status, empty.body.name]).toEqual([201, null]);
    expect((await keys(key)).body.data).toHaveLength(2);
  });

  it("caps an account's active keys (KEYS_PER_ACCOUNT): one more is 422 naming the cap, until one is revoked", async () => {
    // A gateway of its own with a small cap (the default, 100, would meet the request limits first).
    const small = await startGateway({
      store: "memory",
      env: { KEYS_PER_ACCOUNT: "3", WORKERS_URL: "http://127.0.0.1:9" },
    });
    try {
      const { key } = await signUp(small.url);
      const create = () => call(`${small.url}/api/v1/keys`, { key, body: { name: "many" } });
      const first = await create();
      expect([first.status, (await create()).status]).toEqual([201, 201]);
      const refused = await create();
      expect([refused.status, refused.body.error.code, refused.body.error.message]).toEqual([
        422,
        "validation_failed",
        "At most 3 active API keys per account: revoke one first.",
      ]);
      const revoked = await call(`${small.url}/api/v1/keys/${first.body.id}`, {
        key,
        method: "DELETE",
      });
      expect(revoked.status).toBe(200);
      expect((await create()).status).toBe(201);
      expect((await create()).status).toBe(422);
    } finally {
      await small.stop();
    }
  });

  it("counts a rotated key in its grace period against the cap: rotating with grace needs a place, without grace it takes the old key's", async () => {
    const small = await startGateway({
      store: "memory",
      env: { KEYS_PER_ACCOUNT: "2", WORKERS_URL: "http://127.0.0.1:9" },
    });
    try {
      const { key, keyId } = await signUp(small.url);
      const rotate = (id: string, k: string, grace: number) =>
        call(`${small.url}/api/v1/keys/${id}/rotate`, { key: k, body: { grace_seconds: grace } });
      // One place free: the first rotation with grace takes it; its replacement cannot be rotated
      // with grace in turn (before, each replacement could be, without end).
      const first = await rotate(keyId, key, 3600);
      expect(first.status).toBe(201);
      const chained = await rotate(first.body.id, first.body.key, 3600);
      expect([chained.status, chained.body.error.code, chained.body.error.message]).toEqual([
        422,
        "validation_failed",
        "At most 2 active API keys per account: a key in its grace period counts until it ends. Rotate with grace_seconds 0, or revoke a key first.",
      ]);
      const listed = await call(`${small.url}/api/v1/keys`, { key: first.body.key });
      expect(listed.body.data.map((k: { status: string }) => k.status).sort()).toEqual([
        "active",
        "expiring",
      ]);
      // Without a grace period the new key takes the old one's place, at the cap too.
      const swapped = await rotate(first.body.id, first.body.key, 0);
      expect(swapped.status).toBe(201);
      expect((await call(`${small.url}/api/v1/account`, { key: swapped.body.key })).status).toBe(
        200,
      );
      expect((await call(`${small.url}/api/v1/account`, { key: first.body.key })).status).toBe(401);
    } finally {
      await small.stop();
    }
  });

  it.each(["redis", "memory"] as const)(
    "holds the key cap under concurrent creates (%s store): exactly the cap is reached, the rest are 422",
    async (store) => {
      const cap = 5;
      const small = await startGateway({
        store,
        env: { KEYS_PER_ACCOUNT: String(cap), WORKERS_URL: "http://127.0.0.1:9" },
      });
      try {
        const { key } = await signUp(small.url);
        const create = () => call(`${small.url}/api/v1/keys`, { key, body: { name: "racing" } });
        // One place left (the sign-up's key and 3 more: 4 of 5), then 40 creates at once (with
        // the 5 requests before and the listing after, within the Free tier's 60 a minute).
        for (let i = 0; i < cap - 2; i++) expect((await create()).status).toBe(201);
        const raced = await Promise.all(Array.from({ length: 40 }, create));
        const statuses = raced.map((r) => r.status);
        expect(statuses.filter((s) => s === 201)).toHaveLength(1);
        expect(statuses.filter((s) => s === 422)).toHaveLength(39);
        for (const refused of raced.filter((r) => r.status === 422))
          expect([refused.body.error.code, refused.body.error.message]).toEqual([
            "validation_failed",
            `At most ${cap} active API keys per account: revoke one first.`,
          ]);
        const listed = await call(`${small.url}/api/v1/keys`, { key });
        expect(listed.body.data).toHaveLength(cap);
      } finally {
        await small.stop();
      }
    },
  );

  it("refuses a bad grace period and unknown fields", async () => {
    const { key, keyId } = await signUp(gw.url);
    for (const body of [
      { grace_seconds: -1 },
      { grace_seconds: "10" },
      { grace_seconds: 1.5 },
      { grace: 1 },
    ]) {
      const res = await call(`${gw.url}/api/v1/keys/${keyId}/rotate`, { key, body });
      expect([res.status, res.body.error.code]).toEqual([422, "validation_failed"]);
    }
    expect((await me(key)).status).toBe(200);
  });

  it("refuses a key name with control or invisible reordering characters, naming the field; other Unicode is a name", async () => {
    const { key } = await signUp(gw.url);
    for (const name of [
      "ci\u0000",
      "deploy\u001b[31m",
      "a\nb",
      "del\u007f",
      "c1\u0080",
      "c1\u009f",
      // Shown reversed from the override on ("gnp.exe" reads "exe.png"), the key's prefix too.
      "\u202egnp.exe",
      "isolate\u2067x",
      "\u200b", // looks empty
      "b\ufeffom",
      "\u3164", // a Hangul filler: looks empty too
      "ci\u{E0069}\u{E0067}\u{E006E}", // tag characters: hidden ASCII
      "soft\u00adhyphen",
    ]) {
      const res = await call(`${gw.url}/api/v1/keys`, { key, body: { name } });
      expect([
        res.status,
        res.body.error.code,
        res.body.error.param,
        res.body.error.message,
      ]).toEqual([
        422,
        "validation_failed",
        "name",
        'Invalid body field "name": A key name cannot contain control or invisible formatting characters (such as a right-to-left override).',
      ]);
    }
    const named = await call(`${gw.url}/api/v1/keys`, { key, body: { name: "déploiement 🚀" } });
    expect([named.status, named.body.name]).toEqual([201, "déploiement 🚀"]);
    // Joiners and direction marks reorder nothing; emoji sequences and several scripts need them.
    for (const name of ["👩\u200d💻 laptop", "می\u200cخواهم", "שלום\u200f ci"]) {
      const joined = await call(`${gw.url}/api/v1/keys`, { key, body: { name } });
      expect([joined.status, joined.body.name]).toEqual([201, name]);
    }
    const nbsp = await call(`${gw.url}/api/v1/keys`, { key, body: { name: "a\u00a0b~" } });
    expect(nbsp.status).toBe(201);
    // The documented pattern reads the same without Unicode mode (Python's re, most generators).
    const doc = (await call(`${gw.url}/openapi.json`)).body;
    const pattern: string =
      doc.paths["/api/v1/keys"].post.requestBody.content["application/json"].schema.properties.name
        .pattern;
    expect(pattern).not.toMatch(/\\[pP]\{/);
    const plain = new RegExp(pattern);
    expect(["déploiement 🚀", "a\u00a0b~"].map((n) => plain.test(n))).toEqual([true, true]);
    expect(
      ["ci\u0000", "del\u007f", "c1\u009f", "\u202egnp.exe"].map((n) => plain.test(n)),
    ).toEqual([false, false, false, false]);
  });
});

describe("authentication", () => {
  it.each([
    ["no key", undefined, "missing_api_key"],
    ["a garbage key", "hello", "invalid_api_key"],
    ["a well-formed unknown key", `tg_live_${"a".repeat(16)}_${"B".repeat(32)}`, "invalid_api_key"],
    ["the admin key", `tg_admin_${"x".repeat(32)}`, "invalid_api_key"],
  ])("answers %s with 401", async (_name, key, code) => {
    const res = await me(key as string);
    expect(res.status).toBe(401);
    expect(res.body.error).toMatchObject({ type: "authentication_error", code });
  });

  it("takes a key sent as Authorization: Bearer (or bare) wherever x-api-key is taken, and lets browsers send it", async () => {
    const { key, accountId } = await signUp(gw.url);
    const bearer = { authorization: `Bearer ${key}` };
    expect((await call(`${gw.url}/api/v1/account`, { headers: bearer })).body.id).toBe(accountId);
    // An empty x-api-key (a client whose variable is unset) is no key: the bearer is read.
    const besideEmpty = await call(`${gw.url}/api/v1/account`, {
      headers: { ...bearer, "x-api-key": "" },
    });
    expect(besideEmpty.body.id).toBe(accountId);
    // A tool call, on the plain JSON body the fast lane takes and with a charset express serves.
    for (const contentType of ["application/json", "application/json; charset=utf-8"]) {
      const res = await call(`${gw.url}/v1/tools/hash`, {
        body: { text: "bearer" },
        headers: { ...bearer, "content-type": contentType },
      });
      expect([res.status, res.headers.get("x-credits-charged")]).toEqual([200, "1"]);
    }
    const mcp = await fetch(`${gw.url}/mcp`, {
      method: "POST",
      headers: {
        ...bearer,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    // The Free tier has no MCP: the key was read (403), not missing (401).
    expect(mcp.status).toBe(403);
    // A revoked or malformed Toolgate key as a bearer is refused as such; another token is no key.
    expect(
      (await call(`${gw.url}/api/v1/account`, { headers: { authorization: "Bearer tg_live_x" } }))
        .body.error.code,
    ).toBe("invalid_api_key");
    expect(
      (await call(`${gw.url}/api/v1/account`, { headers: { authorization: "Bearer abc" } })).body
        .error.code,
    ).toBe("missing_api_key");
    // The key in Authorization without its scheme is the key too: a tool call is served and
    // charged, never answered with a payment offer an x402 client would pay.
    const unschemed = await call(`${gw.url}/v1/tools/hash`, {
      body: { text: "unschemed" },
      headers: { authorization: key },
    });
    expect([unschemed.status, unschemed.headers.get("x-credits-charged")]).toEqual([200, "1"]);
    // "Bearer " put into x-api-key is refused in words that say what to send instead.
    const inKeyHeader = await call(`${gw.url}/api/v1/account`, {
      headers: { "x-api-key": `Bearer ${key}` },
    });
    expect(inKeyHeader.body.error).toMatchObject({ code: "invalid_api_key" });
    expect(inKeyHeader.body.error.message).toContain(
      'send the key alone in x-api-key, without "Bearer "',
    );
    const cut = await call(`${gw.url}/api/v1/account`, {
      headers: { "x-api-key": key.slice(0, -3) },
    });
    expect(cut.body.error.message).toContain("it is cut short or altered");
    expect(cut.body.error.message).not.toContain(key.slice(0, -3));
    const notAKey = await call(`${gw.url}/api/v1/account`, { headers: { "x-api-key": "admin" } });
    expect(notAKey.body.error.message).toContain("a Toolgate API key looks like tg_live_");
    const preflight = await fetch(`${gw.url}/v1/tools/hash`, {
      method: "OPTIONS",
      headers: {
        origin: "https://app.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
      },
    });
    expect(preflight.headers.get("access-control-allow-headers")).toContain("authorization");
    // MCP's 2026-07-28 revision requires Mcp-Method (and Mcp-Name on tools/call) from browsers too.
    expect(preflight.headers.get("access-control-allow-headers")).toMatch(/mcp-method, mcp-name/);
  });

  it("answers a key whose secret differs by one character with 401", async () => {
    const { key } = await signUp(gw.url);
    const forged = key.slice(0, -1) + (key.endsWith("A") ? "B" : "A");
    expect((await me(forged)).body.error.code).toBe("invalid_api_key");
  });
});
