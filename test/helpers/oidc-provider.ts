import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import { join } from "node:path";
import { exportJWK, generateKeyPair } from "jose";
import Provider from "oidc-provider";
import { call } from "./gateway.js";

/**
 * A real OpenID Connect provider for the SSO tests: the `oidc-provider` package (a certified
 * implementation), over HTTPS with the test CA's certificate, on a free port, with one confidential
 * client registered for the gateway's redirect URI. People sign in through its development
 * interactions (a login form taking any login, then a consent screen); the login is the person's
 * e-mail address, verified unless it starts with "unverified@". `completeSignIn` drives those forms over
 * plain HTTP (with its own cookie jar) for the tests that need exact answers; the browser tests
 * click through them.
 *
 * `publishForeignKeys()` makes its JWKS endpoint publish keys other than the ones it signs with:
 * an ID token then arrives over TLS with a signature that does not verify.
 */
export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  publishForeignKeys(on: boolean): void;
  /** Holds each discovery request (`/.well-known/openid-configuration`) this long before answering. */
  delayDiscovery(ms: number): void;
  /** Holds each token request (the code's redemption) this long before answering. */
  delayToken(ms: number): void;
  /** The body of `PUT /api/v1/account/sso` for this provider's client and these domains. */
  settings(emailDomains: string[]): Record<string, unknown>;
  /** Follows an authorization URL through login and consent as `login`; returns the URL the provider redirects to (the gateway's callback, not followed). */
  completeSignIn(authorizationUrl: string, login: string): Promise<string>;
  stop(): Promise<void>;
}

async function signingKeys() {
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  return {
    keys: [{ ...(await exportJWK(privateKey)), kid: "test-signing", alg: "RS256", use: "sig" }],
  };
}

export async function startOidcProvider(options: {
  redirectUri: string;
}): Promise<TestOidcProvider> {
  const dir = process.env.TEST_TLS_DIR;
  if (!dir) throw new Error("TEST_TLS_DIR is not set: the TLS global setup did not run");
  let provider: Provider | undefined;
  let foreign: string | null = null;
  let discoveryDelayMs = 0;
  let tokenDelayMs = 0;
  const server: Server = createServer(
    { key: readFileSync(join(dir, "server.key")), cert: readFileSync(join(dir, "server.pem")) },
    (req, res) => {
      if (foreign && req.url === "/jwks") {
        res.writeHead(200, { "content-type": "application/jwk-set+json" });
        return res.end(foreign);
      }
      const delay = req.url?.startsWith("/.well-known/openid-configuration")
        ? discoveryDelayMs
        : req.method === "POST" && req.url?.startsWith("/token")
          ? tokenDelayMs
          : 0;
      if (delay > 0) return void setTimeout(() => provider!.callback()(req, res), delay);
      provider!.callback()(req, res);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `https://localhost:${(server.address() as { port: number }).port}`;
  const clientId = "toolgate-dashboard";
  const clientSecret = "a-client-secret-of-the-test-provider-0123456789";
  provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [options.redirectUri],
        grant_types: ["authorization_code"],
        response_types: ["code"],
      },
    ],
    jwks: await signingKeys(),
    cookies: { keys: ["test-provider-cookie-key-0123456789"] },
    claims: { openid: ["sub"], email: ["email", "email_verified"] },
    features: { devInteractions: { enabled: true } },
    async findAccount(_ctx, sub) {
      return {
        accountId: sub,
        async claims() {
          // "unverified@…" is marked false; "text-…" gets the flag as text, as Amazon Cognito sends it.
          const verified = !/^(text-)?unverified@/.test(sub);
          return {
            sub,
            email: sub,
            email_verified: sub.startsWith("text-") ? String(verified) : verified,
          };
        },
      };
    },
  });
  const foreignKeys = await signingKeys();
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...foreignPublic } = foreignKeys.keys[0]!;

  return {
    issuer,
    clientId,
    clientSecret,
    settings: (emailDomains) => ({
      issuer,
      client_id: clientId,
      client_secret: clientSecret,
      email_domains: emailDomains,
    }),
    delayDiscovery(ms) {
      discoveryDelayMs = ms;
    },
    delayToken(ms) {
      tokenDelayMs = ms;
    },
    publishForeignKeys(on) {
      foreign = on ? JSON.stringify({ keys: [foreignPublic] }) : null;
    },
    async completeSignIn(authorizationUrl, login) {
      const jar = new Map<string, string>();
      const send = async (url: string, body?: URLSearchParams) => {
        const res = await fetch(url, {
          method: body ? "POST" : "GET",
          redirect: "manual",
          headers: {
            cookie: [...jar].map(([name, value]) => `${name}=${value}`).join("; "),
            ...(body ? { "content-type": "application/x-www-form-urlencoded" } : {}),
          },
          body,
        });
        for (const cookie of res.headers.getSetCookie()) {
          const [pair = ""] = cookie.split(";");
          const [name = "", value = ""] = pair.split("=");
          if (/max-age=0|expires=thu, 01 jan 1970/i.test(cookie)) jar.delete(name);
          else jar.set(name, value);
        }
        return res;
      };
      let url = authorizationUrl;
      let body: URLSearchParams | undefined;
      for (let step = 0; step < 12; step++) {
        const res = await send(url, body);
        body = undefined;
        const location = res.headers.get("location");
        if (location) {
          const next = new URL(location, url).href;
          if (!next.startsWith(issuer)) return next; // back to the relying party: the callback
          url = next;
          continue;
        }
        const html = await res.text();
        if (res.status !== 200) throw new Error(`the provider answered ${res.status}: ${html}`);
        const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
        const prompt = /name="prompt" value="([^"]+)"/.exec(html)?.[1];
        if (!action || !prompt) throw new Error(`no interaction form in:\n${html}`);
        url = new URL(action.replace(/&amp;/g, "&"), url).href;
        body = new URLSearchParams(
          prompt === "login" ? { prompt, login, password: "any password" } : { prompt },
        );
      }
      throw new Error("the provider never sent the browser back");
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** `PUT /api/v1/account/sso` on the gateway at `url` with the account's key. */
export const putSso = (url: string, key: string, body: Record<string, unknown>) =>
  call(`${url}/api/v1/account/sso`, { method: "PUT", key, body });
