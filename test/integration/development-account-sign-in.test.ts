import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { developmentAccount } from "../../src/development.js";
import { startGateway, type TestGateway } from "../helpers/gateway.js";
import { startSmtpServer } from "../helpers/smtp.js";

/**
 * The development account (`npm start`'s dev@localhost) signs in to the dashboard by e-mailed link
 * like any account, against a real gateway on Redis and a real SMTP receiver: the form's promise
 * of a link is kept.
 */
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
let gw: TestGateway;

beforeAll(async () => {
  smtp = await startSmtpServer();
  gw = await startGateway({ env: { SMTP_URL: smtp.url, SECRET_KEY: "e".repeat(32) } });
}, 60_000);
afterAll(async () => {
  await gw?.stop();
  await smtp?.stop();
});

describe("the development account", () => {
  it("is e-mailed a sign-in link when its address is entered on the sign-in page", async () => {
    const { account } = await developmentAccount(gw.services);
    expect(account.email).toBe("dev@localhost");
    const res = await fetch(`${gw.url}/dashboard/sign-in/email`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        "sec-fetch-site": "same-origin",
      },
      body: "email=dev%40localhost",
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("a sign-in link is on its way");
    await expect
      .poll(() => smtp.mails.filter((m) => m.to.includes("dev@localhost")).length, {
        timeout: 5000,
      })
      .toBe(1);
    expect(smtp.mails[0]!.raw).toContain("/dashboard/sign-in/link?token=");
  });
});
