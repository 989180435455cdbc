import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  call,
  callTool,
  fundedAccount,
  startGateway,
  type TestGateway,
} from "../helpers/gateway.js";

/**
 * Two changes of one key's controls sent at the same moment, each naming a different control:
 * both apply, both in the key's listing and in what the admission enforces (the key record), and
 * neither is lost to the other.
 */
describe.each(["redis", "memory"] as const)("racing key updates (%s store)", (store) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ store });
  });
  afterAll(async () => {
    await gw.stop();
  });

  const updateKey = (key: string, id: string, body: Record<string, unknown>) =>
    call(`${gw.url}/api/v1/keys/${id}`, { key, method: "PATCH", body });

  it("keeps both a budget and an allowed-tools list set by concurrent PATCHes, and enforces both", async () => {
    const { key } = await fundedAccount(gw.url, 1000);
    for (let round = 0; round < 4; round++) {
      const created = (await call(`${gw.url}/api/v1/keys`, { key, body: { name: `k${round}` } }))
        .body;
      const answers = await Promise.all([
        updateKey(key, created.id, { budget: { credits: 1, period: "day" } }),
        updateKey(key, created.id, { allowed_tools: ["hash"] }),
        updateKey(key, created.id, { name: `renamed ${round}` }),
      ]);
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
      const listed = (await call(`${gw.url}/api/v1/keys`, { key })).body.data.find(
        (k: { id: string }) => k.id === created.id,
      );
      expect(listed).toMatchObject({
        name: `renamed ${round}`,
        allowed_tools: ["hash"],
        budget: { credits: 1, period: "day", spent: 0 },
      });
      // What the listing says is what a call meets.
      const other = await callTool(gw.url, created.key, "markdown-to-html", { markdown: "# hi" });
      expect([other.status, other.body.error?.code]).toEqual([403, "tool_not_allowed"]);
      expect((await callTool(gw.url, created.key, "hash", { text: "one" })).status).toBe(200);
      const over = await callTool(gw.url, created.key, "hash", { text: "two" });
      expect([over.status, over.body.error?.code]).toEqual([402, "key_budget_exceeded"]);
    }
  });
});
