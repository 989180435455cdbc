import type { z } from "zod";

/** A failure a tool reports on purpose; anything else thrown is a 500. */
export class WorkerError extends Error {
  constructor(
    readonly status: 422 | 502 | 503 | 504,
    readonly code:
      | "invalid_input"
      | "provider_error"
      | "tool_unavailable"
      | "provider_timeout"
      | "provider_busy"
      | "fetch_failed"
      | "tool_timeout"
      | "resource_limit",
    message: string,
    readonly param?: string,
    readonly more: {
      /** Seconds after which a retry may succeed (a provider's throttling): the answer's `retry_after`. */
      retryAfter?: number;
      /** What the operator's log should hold and the caller must not see (a provider's own error text). */
      logged?: Record<string, unknown>;
      /**
       * The provider itself failed (unreachable, its 5xx, its timeout, its refusal of the gateway's
       * credentials or quota), not the call: the answer's `provider_unhealthy`, which the
       * gateway's status page counts against the provider. An answer that does not satisfy the
       * caller's schema, or a request the provider finds invalid or too large, is the call's.
       */
      providerUnhealthy?: boolean;
    } = {},
  ) {
    super(message);
  }
}

/**
 * The answer to input that does not match the tool's schema: its first issue, naming the field
 * (`param` is "" when the issue is the body as a whole: an unknown key, not an object). Checked
 * in the workers' main thread for most tools, in the heavy pool's thread for heavy ones.
 */
export function invalidInput(error: z.ZodError): WorkerError {
  const issue = error.issues[0]!;
  return new WorkerError(422, "invalid_input", issue.message, issue.path.join("."));
}
