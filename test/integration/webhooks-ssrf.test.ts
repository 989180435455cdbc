import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blockedReason } from "../../src/webhooks/ssrf.js";
import { sealSecret } from "../../src/webhooks/secrets.js";
import { call, fundedAccount, startGateway, type TestGateway } from "../helpers/gateway.js";
import { startReceiver } from "../helpers/receiver.js";

/** The SSRF guard, with private targets NOT allowed (the production setting). */
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

describe("addresses a webhook may not target", () => {
  it.each([
    "127.0.0.1", "127.8.9.10", "0.0.0.0", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
    "169.254.169.254", "169.254.0.1", "100.64.0.1", "100.127.255.254", "224.0.0.1", "239.255.255.250",
    "255.255.255.255", "240.0.0.1", "192.0.0.8", "198.18.0.1",
    "::", "::1", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1",
    "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe", "2002:7f00:1::1",
  ])("refuses %s", (address) => {
    expect(blockedReason(address, false)).not.toBeNull();
  });

  it.each(["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"])("allows the public address %s", (address) => {
    expect(blockedReason(address, false)).toBeNull();
  });

  it("opens loopback and private networks in development, never metadata or multicast", () => {
    expect(blockedReason("127.0.0.1", true)).toBeNull();
    expect(blockedReason("10.0.0.1", true)).toBeNull();
    expect(blockedReason("169.254.169.254", true)).not.toBeNull();
    expect(blockedReason("224.0.0.1", true)).not.toBeNull();
  });
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
    "http://93.184.216.34/hook",
    "https://user:pass@93.184.216.34/hook",
    "https://no-such-host.invalid/hook",
  ])("refuses %s", async (url) => {
    const { key } = await fundedAccount(gw.url, 100, "pro");
    const res = await call(`${gw.url}/api/v1/webhooks/register`, { key, body: { url, events: ["tool.error"] } });
    expect([res.status, res.body.error.code, res.body.error.param]).toEqual([422, "validation_failed", "url"]);
    expect((await call(`${gw.url}/api/v1/webhooks`, { key })).body.data).toEqual([]);
  });
});

describe("delivery", () => {
  it("re-checks the address at connect time: a host that now resolves to loopback gets nothing", async () => {
    const { key, accountId } = await fundedAccount(gw.url, 100, "pro");
    // As if localhost had resolved to a public address when it was registered (DNS rebinding).
    await gw.services.store.addWebhook(
      {
        id: "wh_rebound",
        ownerId: accountId,
        url: rx.url("/rebound"),
        events: ["tool.error"],
        createdAt: Date.now(),
        sealedSecret: sealSecret(gw.services.config.secretKeys, "whsec_c2VjcmV0"),
        previousSealedSecret: null,
        previousSecretExpiresAt: null,
      },
      10,
    );
    expect((await call(`${gw.url}/api/v1/webhooks/test`, { key, body: { webhook_id: "wh_rebound" } })).status).toBe(202);
    let log: { error: string; status: number | null }[] = [];
    for (let i = 0; i < 40 && log.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      log = (await call(`${gw.url}/api/v1/webhooks/wh_rebound/deliveries`, { key })).body.data;
    }
    expect(log[0]).toMatchObject({ status: null, error: expect.stringContaining("refused to connect") });
    expect(rx.at("/rebound")).toEqual([]);
  });
});
