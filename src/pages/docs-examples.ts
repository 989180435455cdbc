/**
 * The worked examples of the API reference: what each operation's curl sends, which shell
 * variables it needs, and which examples deliberately show an error. The tool examples come
 * from the catalogue itself (each input schema's `examples`). test/integration/docs-examples
 * runs every curl on /docs against a real gateway.
 */
export interface OperationExample {
  body?: unknown;
  query?: string;
  /** Extra request headers, as `name: value`. */
  headers?: string[];
  /** This example shows an error on purpose: its status and why. */
  error?: { status: number; why: string };
  /** A representative answer (ids and times differ); the test checks the real one has this shape. */
  response?: unknown;
}

/** Shell variables the examples use for path parameters, and where a reader gets each. */
export const PATH_VARIABLES: Record<string, { variable: string; from: string }> = {
  "/api/v1/keys/{id}": { variable: "KEY_ID", from: "the `id` of a key in `GET /api/v1/keys`" },
  "/api/v1/webhooks/{id}": {
    variable: "WEBHOOK_ID",
    from: "the `id` in the registration answer or `GET /api/v1/webhooks`",
  },
  "/api/v1/admin/webhooks/{id}": {
    variable: "WEBHOOK_ID",
    from: "the `id` in the registration answer or `GET /api/v1/admin/webhooks`",
  },
  "/api/v1/custom-tools/{name}": {
    variable: "TOOL_NAME",
    from: "the `name` you registered with `POST /api/v1/custom-tools`",
  },
  "/api/v1/admin/accounts/{id}": {
    variable: "ACCOUNT_ID",
    from: "the `id` in `GET /api/v1/account` or `GET /api/v1/admin/accounts`",
  },
  "/api/v1/admin/incidents/{id}": {
    variable: "INCIDENT_ID",
    from: "the `id` in the answer that opened the incident",
  },
  "{event_id}": { variable: "EVENT_ID", from: "an `event_id` in the webhook's delivery log" },
  "/v1/tools/{name}": { variable: "", from: "" },
};

export const OPERATION_EXAMPLES: Record<string, OperationExample> = {
  ...Object.fromEntries(
    (["verify", "settle"] as const).map((op) => [
      `POST /x402/${op}`,
      {
        body: {
          x402Version: 1,
          paymentPayload: {
            x402Version: 1,
            scheme: "exact",
            network: "base-sepolia",
            payload: {
              signature: "0x…",
              authorization: {
                from: "0x…",
                to: "0xYourPayTo…",
                value: "10000",
                validAfter: "0",
                validBefore: "1795000000",
                nonce: "0x…",
              },
            },
          },
          paymentRequirements: {
            scheme: "exact",
            network: "base-sepolia",
            maxAmountRequired: "10000",
            resource: "https://your.app/paid",
            payTo: "0xYourPayTo…",
            maxTimeoutSeconds: 300,
            asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
          },
        },
        // Sent with the key of an account with the facilitator feature (Business), as your x402
        // middleware sends it: the placeholder payment is answered 200 with its verdict (invalid).
      },
    ]),
  ),
  "POST /api/v1/signup": {
    body: { email: "you@example.com" },
    response: {
      account: {
        id: "acct_k3v9x2m7q1w8e5r4",
        email: "you@example.com",
        email_verified: false,
        tier: "free",
        credits: 25,
      },
      api_key: "tg_live_…",
      key: { id: "key_7h2k9d3m1p6q8r4t", prefix: "tg_live_k3v9", last4: "x9Qa" },
    },
  },
  "GET /api/v1/verify-email": { query: "token=$VERIFICATION_TOKEN" },
  "POST /api/v1/account/verification-email": {},
  "POST /api/v1/keys": { body: { name: "ci" } },
  "POST /api/v1/keys/{id}/rotate": { body: { grace_seconds: 3600 } },
  "PUT /api/v1/account/spend-alert": { body: { credits: 250 } },
  "DELETE /api/v1/account/spend-alert": {
    error: {
      status: 404,
      why: "Until a spend alert is set with PUT /api/v1/account/spend-alert, there is none to remove.",
    },
  },
  "GET /api/v1/usage": { query: "limit=20" },
  "GET /api/v1/analytics": { query: "granularity=day&group_by=tool" },
  "GET /api/v1/events": { query: "limit=20" },
  "GET /api/v1/admin/accounts": { query: "limit=20" },
  "PUT /api/v1/admin/accounts/{id}/tier": { body: { tier: "pro" } },
  "POST /api/v1/admin/accounts/{id}/credits": {
    body: { amount: 500, reason: "support goodwill" },
    headers: ["Idempotency-Key: grant-2026-11-22-001"],
  },
  "POST /api/v1/custom-tools": {
    body: {
      name: "word-count",
      description: "Counts the words of a text.",
      url: "https://example.com/tools/word-count",
      input_schema: {
        type: "object",
        properties: { text: { type: "string", maxLength: 10000 } },
        required: ["text"],
        additionalProperties: false,
      },
      output_schema: {
        type: "object",
        properties: { words: { type: "integer" } },
        required: ["words"],
      },
      price_credits: 2,
      timeout_ms: 5000,
    },
  },
  "PUT /api/v1/admin/accounts/{id}/workers": {
    body: { url: "https://workers.acme.example" },
    error: {
      status: 422,
      why: "The URL must be the origin of a running workers deployment, at a public HTTPS address the gateway can resolve; workers.acme.example is a placeholder that resolves nowhere, so the example is refused naming url. The account must be Business (else 403 feature_not_in_tier).",
    },
  },
  "DELETE /api/v1/admin/accounts/{id}/workers": {
    error: {
      status: 404,
      why: "Until a pool is bound with PUT /api/v1/admin/accounts/{id}/workers (refused above, its URL a placeholder), there is none to unbind.",
    },
  },
  "PUT /api/v1/account/sso": {
    body: {
      issuer: "https://login.acme.example",
      client_id: "toolgate-dashboard",
      client_secret: "the-client-secret-from-your-provider",
      email_domains: ["acme.example"],
    },
    error: {
      status: 422,
      why: "The issuer must be your OpenID Connect provider, at a public HTTPS address whose discovery document (/.well-known/openid-configuration) the gateway reads on save; login.acme.example is a placeholder that resolves nowhere, so the example is refused naming issuer. The account must be Business (else 403 feature_not_in_tier).",
    },
  },
  "GET /api/v1/account/sso": {
    error: {
      status: 404,
      why: "Until single sign-on is set up with PUT /api/v1/account/sso, there is no connection to show.",
    },
  },
  "DELETE /api/v1/account/sso": {
    error: {
      status: 404,
      why: "Until single sign-on is set up with PUT /api/v1/account/sso, there is no connection to delete.",
    },
  },
  "POST /api/v1/webhooks/register": {
    body: { url: "https://example.com/hooks/toolgate", events: ["credits.low", "tool.error"] },
  },
  "POST /api/v1/admin/webhooks/register": {
    body: { url: "https://example.com/hooks/platform", events: ["agent.registered"] },
  },
  "POST /api/v1/webhooks/test": { body: { webhook_id: "$WEBHOOK_ID" } },
  "POST /api/v1/admin/webhooks/test": { body: {} },
  "POST /api/v1/webhooks/{id}/rotate-secret": { body: { overlap_seconds: 3600 } },
  "POST /api/v1/admin/webhooks/{id}/rotate-secret": { body: { overlap_seconds: 3600 } },
  "GET /api/v1/webhooks/{id}/deliveries": { query: "limit=20" },
  "GET /api/v1/admin/webhooks/{id}/deliveries": { query: "limit=20" },
  "POST /api/v1/credits/purchase": {
    body: { pack: "1k" },
    error: {
      status: 402,
      why: "Without a payment header this answers 402 with the x402 offer; an x402 client signs it and retries with X-PAYMENT or PAYMENT-SIGNATURE.",
    },
  },
  "POST /api/v1/plans/purchase": {
    body: { plan: "starter" },
    error: {
      status: 402,
      why: "Without a payment header this answers 402 with the x402 offer; an x402 client signs it and retries.",
    },
  },
  "POST /api/v1/wallet/challenge": {
    body: { address: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", chain_id: 84532 },
  },
  "POST /api/v1/wallet/claim": {
    body: { message: "$CHALLENGE_MESSAGE", signature: "0x00" },
    error: {
      status: 400,
      why: "the message must be the challenge from /wallet/challenge, signed by the wallet (EIP-4361); anything else is refused with invalid_token.",
    },
  },
  "POST /api/v1/admin/incidents": {
    body: {
      title: "Slow AI answers",
      message: "AI tools answer slowly; we are looking into it.",
      impact: "minor",
      components: ["rest-api"],
    },
  },
  "POST /api/v1/admin/incidents/{id}/updates": {
    body: { status: "monitoring", message: "The provider recovered; we are watching." },
  },
  "POST /api/v1/admin/incidents/{id}/resolve": { body: { message: "Answers are back to normal." } },
  "POST /mcp": {
    headers: ["accept: application/json, text/event-stream"],
    body: {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "curl", version: "1.0" },
      },
    },
  },
};

/** `'…'` for the shell: single quotes, with each inner `'` closed, escaped and reopened. */
export const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/**
 * The curl for an operation. The URL is in double quotes so `$VARIABLES` expand; the key is
 * `"x-api-key: $TOOLGATE_API_KEY"` (double quotes: in single quotes the shell would send the
 * text `$TOOLGATE_API_KEY` itself).
 */
export function curlFor(options: {
  baseUrl: string;
  method: string;
  path: string;
  auth: "key" | "admin" | "none" | "optional";
  example?: OperationExample;
  body?: unknown;
}): string {
  let path = options.path;
  for (const [pattern, { variable }] of Object.entries(PATH_VARIABLES)) {
    if (pattern.startsWith("{")) path = path.replace(pattern, `$${variable}`);
    else if (variable && path.startsWith(pattern))
      path = path.replace(/\{(?:id|name)\}/, `$${variable}`);
  }
  path = path.replace("{name}", "hash");
  const query = options.example?.query ? `?${options.example.query}` : "";
  const lines = [`curl -sS -X ${options.method.toUpperCase()} "${options.baseUrl}${path}${query}"`];
  if (options.auth === "key" || options.auth === "optional")
    lines.push(`-H "x-api-key: $TOOLGATE_API_KEY"`);
  if (options.auth === "admin") lines.push(`-H "x-api-key: $TOOLGATE_ADMIN_KEY"`);
  for (const header of options.example?.headers ?? [])
    lines.push(`-H ${header.includes("$") ? `"${header}"` : shellQuote(header)}`);
  if (options.body !== undefined || options.example?.body !== undefined) {
    lines.push(`-H "content-type: application/json"`);
    const json = JSON.stringify(options.body ?? options.example!.body);
    // An operation example that names a shell variable is double-quoted so the shell fills it
    // in; a tool's input is always sent literally.
    const expand = options.body === undefined && /\$[A-Z_]+/.test(json);
    lines.push(`-d ${expand ? `"${json.replace(/(["\\`])/g, "\\$1")}"` : shellQuote(json)}`);
  }
  return lines.join(" \\\n  ");
}
