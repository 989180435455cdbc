import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";
import { startReceiver } from "../helpers/receiver.js";

/**
 * Rotations of one webhook's secret sent at the same moment, over HTTP, to a gateway on Redis:
 * the store decides each one against the record as the one before left it, so no caller is handed
 * a secret that never signs, the promised overlap is never cut short, and a deleted webhook stays
 * deleted.
 */
let gw: TestGateway;
let rx: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  rx = await startReceiver();
  gw = await startGateway({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "1" } });
});
afterAll(async () => {
  await gw.stop();
  await rx.stop();
});

const RACERS = 8;
let paths = 0;
const uniquePath = (label: string) => `/${label}-${++paths}-${Date.now()}`;

async function webhookOf(label: string) {
  const { key } = await fundedAccount(gw.url, 100, "pro");
  const path = uniquePath(label);
  const hook = (
    await call(`${gw.url}/api/v1/webhooks/register`, {
      key,
      body: { url: rx.url(path), events: ["tool.error"] },
    })
  ).body;
  const rotate = (overlap: number) =>
    call(`${gw.url}/api/v1/webhooks/${hook.id}/rotate-secret`, {
      key,
      body: { overlap_seconds: overlap },
    });
  /** The secrets a test event arrives signed with: [X-Webhook-Signature's, webhook-signature's]. */
  async function signaturesOfATestEvent(count: number) {
    await call(`${gw.url}/api/v1/webhooks/test`, { key, body: { webhook_id: hook.id } });
    const got = (await rx.waitFor(path, count))[count - 1]!;
    const signed = `${got.headers["webhook-id"]}.${got.headers["webhook-timestamp"]}.${got.raw}`;
    return {
      legacy: got.headers["x-webhook-signature"],
      standard: String(got.headers["webhook-signature"]).split(" "),
      legacyOf: (secret: string) =>
        `sha256=${createHmac("sha256", secret).update(got.raw).digest("hex")}`,
      standardOf: (secret: string) =>
        `v1,${createHmac("sha256", Buffer.from(secret.slice(6), "base64"))
          .update(signed)
          .digest("base64")}`,
    };
  }
  return { key, hook, rotate, signaturesOfATestEvent };
}

describe("racing rotations of a webhook's secret", () => {
  it("with an overlap: exactly one wins, the others are 409, and the winner's secret signs beside the original", async () => {
    const { hook, rotate, signaturesOfATestEvent } = await webhookOf("overlap");
    const answers = await Promise.all(Array.from({ length: RACERS }, () => rotate(3600)));
    const won = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 409);
    expect([won.length, refused.length]).toEqual([1, RACERS - 1]);
    for (const r of refused) expect(r.body.error.code).toBe("secret_rotation_in_progress");
    const winner = won[0]!.body.secret as string;

    const signatures = await signaturesOfATestEvent(1);
    expect(signatures.legacy).toBe(signatures.legacyOf(winner));
    // The original secret still signs, as the winning rotation promised: no loser dropped it.
    expect(signatures.standard).toEqual([
      signatures.standardOf(winner),
      signatures.standardOf(hook.secret),
    ]);
  });

  it("with no overlap: all succeed one after another, and the secret the last one returned signs alone", async () => {
    const { rotate, signaturesOfATestEvent } = await webhookOf("cut");
    const answers = await Promise.all(Array.from({ length: RACERS }, () => rotate(0)));
    expect(answers.map((a) => a.status)).toEqual(Array(RACERS).fill(200));
    const secrets = answers.map((a) => a.body.secret as string);
    expect(new Set(secrets).size).toBe(RACERS);

    const signatures = await signaturesOfATestEvent(1);
    expect(signatures.standard).toHaveLength(1);
    const signer = secrets.find((s) => signatures.legacy === signatures.legacyOf(s));
    expect(signer).toBeDefined();
    expect(signatures.standard).toEqual([signatures.standardOf(signer!)]);
    // The one that signs is the last rotation: another rotation now replaces exactly it.
    const next = await rotate(60);
    const after = await signaturesOfATestEvent(2);
    expect(after.standard).toEqual([after.standardOf(next.body.secret), after.standardOf(signer!)]);
  });

  it("a cut racing rotations with an overlap: the secret it replaced never signs again", async () => {
    // overlap_seconds 0 is how a leaked secret is cut off; whatever order the store puts the
    // racing rotations in, the original secret is gone once the cut answered.
    const { hook, rotate, signaturesOfATestEvent } = await webhookOf("leaked");
    const answers = await Promise.all([
      ...Array.from({ length: RACERS / 2 }, () => rotate(3600)),
      rotate(0),
      ...Array.from({ length: RACERS / 2 }, () => rotate(3600)),
    ]);
    expect(answers[RACERS / 2]!.status).toBe(200);
    for (const a of answers) expect([200, 409]).toContain(a.status);
    const signatures = await signaturesOfATestEvent(1);
    expect(signatures.standard).not.toContain(signatures.standardOf(hook.secret));
    const handedOut = answers.filter((a) => a.status === 200).map((a) => a.body.secret as string);
    expect(handedOut.map((s) => signatures.legacyOf(s))).toContain(signatures.legacy);
  });

  it("racing a delete: the webhook stays deleted, and rotations after it are 404", async () => {
    // The delete goes out as the rotations are being served, a little later each round.
    for (const delayMs of [0, 1, 2, 3]) {
      const { key, hook, rotate } = await webhookOf("deleted");
      const deleting = new Promise((r) => setTimeout(r, delayMs)).then(() =>
        call(`${gw.url}/api/v1/webhooks/${hook.id}`, { method: "DELETE", key }),
      );
      const answers = await Promise.all(Array.from({ length: RACERS }, () => rotate(0)));
      expect((await deleting).status).toBe(200);
      for (const a of answers) expect([200, 404]).toContain(a.status);
      expect((await call(`${gw.url}/api/v1/webhooks`, { key })).body.data).toEqual([]);
      expect((await rotate(0)).status).toBe(404);
    }
  });
});
