import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verificationToken } from "../../src/accounts/email-verification.js";
import { call, signUp, startGateway, type TestGateway } from "../helpers/gateway.js";

/**
 * The link in the verification e-mail, opened in a browser, shows a page a person can read;
 * an API client asking for JSON (or anything, as curl does) still gets the JSON answer.
 */
const BROWSER_ACCEPT =
  "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ env: { SIGNUPS_PER_HOUR_PER_IP: "100" } });
});
afterAll(() => gw.stop());

const open = (token: string, accept: string) =>
  fetch(`${gw.url}/api/v1/verify-email?token=${encodeURIComponent(token)}`, {
    headers: { accept },
  });

describe("the e-mail verification link", () => {
  it("opened in a browser, shows a page saying the address is verified and what was added", async () => {
    const { accountId } = await signUp(gw.url);
    const token = verificationToken(gw.services.config.secretKeys[0]!, accountId);
    const res = await open(token, BROWSER_ACCEPT);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    const page = await res.text();
    expect(page).toContain("Your e-mail address is verified");
    expect(page).toContain("75 credits were added; your balance is 100.");
    expect(await (await open(token, BROWSER_ACCEPT)).text()).toContain("already verified");
  });

  it("opened by a client asking for JSON (or sending */*), answers JSON as before", async () => {
    const { accountId } = await signUp(gw.url);
    const token = verificationToken(gw.services.config.secretKeys[0]!, accountId);
    const json = await call(`${gw.url}/api/v1/verify-email?token=${encodeURIComponent(token)}`, {
      headers: { accept: "application/json" },
    });
    expect(json.body).toMatchObject({
      account_id: accountId,
      email_verified: true,
      credits_added: 75,
    });
    const curl = await open(token, "*/*");
    expect(curl.headers.get("content-type")).toContain("application/json");
  });

  it("a bad link shows a page saying so in a browser, and the error shape to a JSON client", async () => {
    const page = await open("acct_x.1.forged", BROWSER_ACCEPT);
    expect(page.status).toBe(400);
    expect(await page.text()).toContain("This link does not work");
    const json = await open("acct_x.1.forged", "application/json");
    expect(json.status).toBe(400);
    expect((await json.json()).error.code).toBe("invalid_token");
  });

  it("a link cut short or run on (no token, or one too long) also shows the page in a browser", async () => {
    for (const url of ["/api/v1/verify-email", `/api/v1/verify-email?token=${"a".repeat(300)}`]) {
      const page = await fetch(`${gw.url}${url}`, { headers: { accept: BROWSER_ACCEPT } });
      expect(page.status).toBe(422);
      expect(page.headers.get("content-type")).toContain("text/html");
      expect(await page.text()).toContain("The verification link is incomplete");
      const json = await fetch(`${gw.url}${url}`, { headers: { accept: "application/json" } });
      expect((await json.json()).error.code).toBe("validation_failed");
    }
  });
});
