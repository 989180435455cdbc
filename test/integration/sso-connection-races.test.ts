import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";
import { putSso, startOidcProvider, type TestOidcProvider } from "../helpers/oidc-provider.js";

/**
 * Changes of one account's SSO connection sent at the same moment, on a gateway on Redis and on
 * the embedded mode's memory store: the connection kept lists exactly the e-mail domains the
 * account holds (none left claimed by a connection that lost the race), and a connection deleted
 * stays deleted (a change that keeps the stored client secret does not bring it back).
 */
describe.each(["redis", "memory"] as const)("racing SSO connection changes (%s store)", (store) => {
  let gw: TestGateway;
  let idp: TestOidcProvider;
  beforeAll(async () => {
    idp = await startOidcProvider({ redirectUri: "http://127.0.0.1:1/dashboard/sso/callback" });
    gw = await startGateway({
      store,
      env: { SECRET_KEY: "s".repeat(32), SSO_ALLOW_PRIVATE_TARGETS: "1" },
    });
  }, 90_000);
  afterAll(async () => {
    await gw?.stop();
    await idp?.stop();
  });

  let domains = 0;
  const domain = () => `race-${store}-${++domains}-${Date.now()}.example`;
  const sso = (key: string) => call(`${gw.url}/api/v1/account/sso`, { key });
  const deleteSso = (key: string) =>
    call(`${gw.url}/api/v1/account/sso`, { method: "DELETE", key });

  it("concurrent saves with different domains: the one kept holds its domains, the others' are free again", async () => {
    const { key } = await fundedAccount(gw.url, 100);
    const offered = Array.from({ length: 6 }, domain);
    const answers = await Promise.all(offered.map((d) => putSso(gw.url, key, idp.settings([d]))));
    expect(answers.map((a) => a.status)).toEqual(Array(offered.length).fill(200));
    const kept = (await sso(key)).body.email_domains as string[];
    expect(kept).toHaveLength(1);
    // Every domain the kept connection does not list can be taken by another account.
    const other = await fundedAccount(gw.url, 100);
    for (const d of offered.filter((d) => !kept.includes(d)))
      expect((await putSso(gw.url, other.key, idp.settings([d]))).status).toBe(200);
    const taken = await putSso(gw.url, other.key, idp.settings(kept));
    expect([taken.status, taken.body.error?.code]).toEqual([409, "sso_domain_taken"]);
  });

  it("a save keeping the stored secret racing a delete: the connection stays deleted and its domains free", async () => {
    for (const delayMs of [0, 2, 5, 10]) {
      const { key } = await fundedAccount(gw.url, 100);
      const d = domain();
      expect((await putSso(gw.url, key, idp.settings([d]))).status).toBe(200);
      const { client_secret: _secret, ...withoutSecret } = idp.settings([d]);
      const saving = putSso(gw.url, key, withoutSecret);
      const deleting = new Promise((r) => setTimeout(r, delayMs)).then(() => deleteSso(key));
      const [saved, deleted] = await Promise.all([saving, deleting]);
      expect(deleted.status).toBe(200);
      if (saved.status === 200) {
        // The save came first: the delete removed what it saved.
        expect((await sso(key)).status).toBe(404);
      } else {
        // The delete came first: with nothing stored, a save without the secret is refused.
        expect([saved.status, saved.body.error.param]).toEqual([422, "client_secret"]);
        expect((await sso(key)).status).toBe(404);
      }
      const other = await fundedAccount(gw.url, 100);
      expect((await putSso(gw.url, other.key, idp.settings([d]))).status).toBe(200);
    }
  });
});
