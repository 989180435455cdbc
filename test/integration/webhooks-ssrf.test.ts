import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sealSecret } from "../../src/webhooks/secrets.js";
import { call, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";
import { startReceiver } from "../helpers/receiver.js";

/** The SSRF guard, with private targets NOT allowed (the production setting). The address table is test/unit/ssrf-addresses.test.ts. */
let gw: TestGateway;
let rx: Awaited<ReturnType<typeof startReceiver>>;
beforeAll(async () => {
  rx = await startReceiver();
  gw = await startGateway();
});
afterAll(async () => {
  await gw.stop();
  await rx.stop();
});

describe("registration", () => {
  it.each([
    "https://127.0.0.1/hook",
    "https://localhost/hook",
    "https://[::1]/hook",
    "https://[::ffff:127.0.0.1]/hook",
    "https://[::ffff:7f00:1]/hook",
    "https://2130706433/hook",
    "https://0x7f000001/hook",
    "https://017700000001/hook",
    "https://127.1/hook",
    "https://0/hook",
    "https://169.254.169.254/latest/meta-data/",
    "https://10.0.0.5/hook",
    "https://100.64.1.1/hook",
    "https://[fd00::1]/hook",
    "https://[::127.0.0.1]/hook",
    "https://[::10.0.0.1]/hook",
    "https://[::169.254.169.254]/hook",
    "https://[::ffff:0:a9fe:a9fe]/hook",
    "https://[64:ff9b::a9fe:a9fe]/hook",
    "https://[2002:a9fe:a9fe::1]/hook",
    "https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook",
    "https://[fec0::1]/hook",
    "https://[2001:db8::1]/hook",
    "http://93.184.216.34/hook",
    "https://user:pass@93.184.216.34/hook",
    // Port 0 is no server's port: a client connecting to it goes to 443 instead.
    "https://1.1.1.1:0/hook",
    "https://1.1.1.1:00/hook",
    "https://no-such-host.invalid/hook",
  ])("refuses %s", async (url) => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const res = await call(`${gw.url}/api/v1/webhooks/register`, {
      key,
      body: { url, events: ["tool.error"] },
    });
    expect([res.status, res.body.error.code, res.body.error.param]).toEqual([
      422,
      "validation_failed",
      "url",
    ]);
    expect((await call(`${gw.url}/api/v1/webhooks`, { key })).body.data).toEqual([]);
  });

  it("says of a name only that it does not resolve to a public address: neither what it resolves to nor whether it resolves", async () => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const refusal = async (url: string) =>
      (
        await call(`${gw.url}/api/v1/webhooks/register`, {
          key,
          body: { url, events: ["tool.error"] },
        })
      ).body.error.message;
    expect(await refusal("https://localhost/hook")).toBe(
      await refusal("https://no-such-host.invalid/hook").then((m: string) =>
        m.replace("no-such-host.invalid", "localhost"),
      ),
    );
    expect(await refusal("https://localhost/hook")).toContain(
      "localhost does not resolve to a public address",
    );
    expect(await refusal("https://localhost/hook")).not.toContain("127.0.0.1");
    // An address the caller wrote is named with its range.
    expect(await refusal("https://127.0.0.1/hook")).toContain("127.0.0.1 is in the loopback range");
  });
});

describe("delivery", () => {
  /** Stores a webhook as if its URL had passed registration, sends it the test event, and returns its first delivery log line. */
  async function deliverTo(id: string, url: string) {
    const { key, accountId } = await fundedAccount(gw.url, 100, "pro");
    await gw.services.store.addWebhook(
      {
        id,
        ownerId: accountId,
        url,
        events: ["tool.error"],
        createdAt: Date.now(),
        sealedSecret: sealSecret(gw.services.config.secretKeys, "whsec_c2VjcmV0"),
        previousSealedSecret: null,
        previousSecretExpiresAt: null,
      },
      10,
    );
    expect(
      (await call(`${gw.url}/api/v1/webhooks/test`, { key, body: { webhook_id: id } })).status,
    ).toBe(202);
    // Delivered by a queued job: within a second or two, later on a loaded machine.
    let log: { error: string; status: number | null }[] = [];
    for (const deadline = Date.now() + 15_000; log.length === 0 && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 50));
      log = (await call(`${gw.url}/api/v1/webhooks/${id}/deliveries`, { key })).body.data;
    }
    return log[0];
  }

  it("re-checks the address at connect time: a host that now resolves to loopback gets nothing", async () => {
    // As if localhost had resolved to a public address when it was registered (DNS rebinding).
    expect(await deliverTo("wh_rebound", rx.url("/rebound"))).toMatchObject({
      status: null,
      error: expect.stringContaining(
        "refused to connect to localhost: it does not resolve to a public address",
      ),
    });
    expect(rx.at("/rebound")).toEqual([]);
  });

  it.each([
    ["127.0.0.1", "127.0.0.1"],
    ["[::ffff:7f00:1]", "::ffff:7f00:1"],
  ])(
    "refuses an IP-literal host at connect time too: %s, registered while private targets were allowed",
    async (host, address) => {
      const path = `/literal-${address.replace(/\W/g, "")}`;
      expect(
        await deliverTo(
          `wh_literal_${address.replace(/\W/g, "")}`,
          `https://${host}:${rx.port}${path}`,
        ),
      ).toMatchObject({
        status: null,
        error: `refused to connect to ${address}: 127.0.0.1 is in the loopback range`,
      });
      expect(rx.at(path)).toEqual([]);
    },
  );
});
