import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomId } from "../../src/lib/ids.js";
import { call, startGateway, type TestGateway } from "../helpers/gateway.js";

/**
 * Sign-ups for one e-mail address sent at the same moment: one account comes of them, and the
 * others are told the address is taken. Before, a sign-up that found the address claimed by
 * another still being created took the claim over, and both made an account.
 */
describe.each(["redis", "memory"] as const)("racing sign-ups (%s store)", (store) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ store });
  });
  afterAll(async () => {
    await gw.stop();
  });

  it("makes one account per e-mail address, however many sign-ups race for it", async () => {
    for (let round = 0; round < 5; round++) {
      const email = `race-${randomId(8)}@example.com`;
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          call(`${gw.url}/api/v1/signup`, {
            body: { email },
            headers: { "x-forwarded-for": `10.9.${round}.${i + 1}` },
          }),
        ),
      );
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses).toEqual([201, ...Array(11).fill(409)]);
      expect(
        new Set(answers.filter((a) => a.status === 409).map((a) => a.body.error.code)),
      ).toEqual(new Set(["email_taken"]));
      // The account that was made is the one the address leads to.
      const made = answers.find((a) => a.status === 201)!.body;
      const me = await call(`${gw.url}/api/v1/account`, { key: made.api_key });
      expect(me.body.email ?? me.body.account?.email).toBe(email);
    }
  });
});
