import type * as oidc from "openid-client";
import { ProviderUnreachableError, providerFetch } from "./provider-fetch.js";

/**
 * A Business account's OpenID Connect provider, as a relying party sees it — all of it done by
 * openid-client (v6), none by hand: discovery (the issuer in the metadata must be the configured
 * one), the authorization request (code flow, PKCE S256, state, nonce), and the callback's
 * checks (state; the code redeemed at the token endpoint with the PKCE verifier and the client
 * secret; the ID token's issuer, audience, expiry, nonce, and — `enableNonRepudiationChecks` —
 * its signature against the provider's published keys, even though it came over TLS).
 * Every request goes through `providerFetch` (the SSRF guard).
 */
export const PROVIDER_TIMEOUT_SECONDS = 10;

/**
 * openid-client (and through providerFetch, undici) is loaded by the first sign-on step, not at
 * start-up: most gateways never use single sign-on. Kept once loaded, so `providerFailure` can
 * recognise the library's errors (none can exist before it is loaded).
 */
let library: typeof oidc | null = null;
const openidClient = async () => (library ??= await import("openid-client"));

/** What the sign-in asks the provider for: an ID token with the user's e-mail address. */
const SCOPE = "openid email";

export interface ProviderClient {
  issuer: string;
  clientId: string;
  clientSecret: string;
}

/** A discovered provider, ready for this client; `close()` frees its connections. */
export interface DiscoveredProvider {
  config: oidc.Configuration;
  close(): Promise<void>;
}

/** What a sign-in attempt keeps server-side between the redirect and the callback. */
export interface AttemptChecks {
  state: string;
  nonce: string;
  codeVerifier: string;
}

export const newAttemptChecks = async (): Promise<AttemptChecks> => {
  const oidc = await openidClient();
  return {
    state: oidc.randomState(),
    nonce: oidc.randomNonce(),
    codeVerifier: oidc.randomPKCECodeVerifier(),
  };
};

export async function discoverProvider(
  client: ProviderClient,
  allowPrivate: boolean,
): Promise<DiscoveredProvider> {
  const oidc = await openidClient();
  const http = providerFetch(allowPrivate);
  const fetch = http.fetch as unknown as oidc.CustomFetch;
  try {
    // client_secret_basic is OpenID Connect's default; a provider that lists only
    // client_secret_post among its methods gets that instead.
    const discovered = await oidc.discovery(
      new URL(client.issuer),
      client.clientId,
      undefined,
      oidc.ClientSecretBasic(client.clientSecret),
      { [oidc.customFetch]: fetch, timeout: PROVIDER_TIMEOUT_SECONDS },
    );
    const metadata = discovered.serverMetadata();
    const methods = metadata.token_endpoint_auth_methods_supported;
    const auth =
      methods && !methods.includes("client_secret_basic") && methods.includes("client_secret_post")
        ? oidc.ClientSecretPost(client.clientSecret)
        : oidc.ClientSecretBasic(client.clientSecret);
    const config = new oidc.Configuration(metadata, client.clientId, undefined, auth);
    config[oidc.customFetch] = fetch;
    config.timeout = PROVIDER_TIMEOUT_SECONDS;
    oidc.enableNonRepudiationChecks(config);
    return { config, close: http.close };
  } catch (err) {
    await http.close();
    throw err;
  }
}

/** Where to send the browser: the provider's authorization endpoint with this attempt's checks. */
export async function authorizationUrl(
  provider: DiscoveredProvider,
  redirectUri: string,
  checks: AttemptChecks,
): Promise<URL> {
  const oidc = await openidClient();
  return oidc.buildAuthorizationUrl(provider.config, {
    redirect_uri: redirectUri,
    scope: SCOPE,
    state: checks.state,
    nonce: checks.nonce,
    code_challenge: await oidc.calculatePKCECodeChallenge(checks.codeVerifier),
    code_challenge_method: "S256",
  });
}

/** Who the provider says signed in. */
export interface SignedInUser {
  subject: string;
  email: string | null;
  /** The provider's `email_verified`, when it says. */
  emailVerified: boolean | null;
}

/**
 * The callback, checked and redeemed: `callbackUrl` is the redirect URI with the query the
 * provider sent. The e-mail address comes from the ID token or, when the provider keeps it out of
 * the token (as OpenID Connect allows once an access token is issued), from its UserInfo
 * endpoint, whose `sub` must be the ID token's. Throws when any check fails.
 */
export async function redeemCallback(
  provider: DiscoveredProvider,
  callbackUrl: URL,
  checks: AttemptChecks,
): Promise<SignedInUser> {
  const oidc = await openidClient();
  const tokens = await oidc.authorizationCodeGrant(provider.config, callbackUrl, {
    expectedState: checks.state,
    expectedNonce: checks.nonce,
    pkceCodeVerifier: checks.codeVerifier,
    idTokenExpected: true,
  });
  const idToken = tokens.claims();
  if (!idToken) throw new oidc.ClientError("the provider sent no ID token");
  const claims =
    typeof idToken.email === "string" || !provider.config.serverMetadata().userinfo_endpoint
      ? idToken
      : await oidc.fetchUserInfo(provider.config, tokens.access_token, idToken.sub);
  return {
    subject: idToken.sub,
    email: typeof claims.email === "string" ? claims.email : null,
    emailVerified: emailVerifiedClaim(claims.email_verified),
  };
}

/**
 * The provider's `email_verified`: a boolean as OpenID Connect defines it, or the text "true" /
 * "false" some providers send (Amazon Cognito); absent is null (the provider does not say). Any
 * other value is false: "false" read as "does not say" let an unverified address sign in.
 */
function emailVerifiedClaim(claim: unknown): boolean | null {
  if (claim === undefined || claim === null) return null;
  if (typeof claim === "boolean") return claim;
  return typeof claim === "string" && claim.toLowerCase() === "true";
}

/**
 * Why a provider step failed, for the person signing in or configuring it: `unreachable` when the
 * provider could not be used at all (address refused, no answer, not an OpenID provider), else a
 * refusal or a failed check. null for anything that is not the provider's (a fault of ours).
 */
export function providerFailure(err: unknown): { unreachable: boolean; reason: string } | null {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof ProviderUnreachableError) return { unreachable: true, reason: e.message };
  }
  const oidc = library;
  if (!oidc) return null;
  if (err instanceof oidc.AuthorizationResponseError || err instanceof oidc.ResponseBodyError) {
    const description = err.error_description ? ` (${err.error_description})` : "";
    return { unreachable: false, reason: `the provider answered ${err.error}${description}` };
  }
  if (err instanceof oidc.ClientError) {
    const unreachable = [
      "OAUTH_TIMEOUT",
      "OAUTH_RESPONSE_IS_NOT_CONFORM",
      "OAUTH_RESPONSE_IS_NOT_JSON",
    ].includes(String(err.code));
    const timedOut = err.code === "OAUTH_TIMEOUT";
    return {
      unreachable,
      reason: timedOut
        ? `the provider did not answer within ${PROVIDER_TIMEOUT_SECONDS} s`
        : err.message,
    };
  }
  return null;
}
