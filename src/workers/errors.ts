/** A failure a tool reports on purpose; anything else thrown is a 500. */
export class WorkerError extends Error {
  constructor(
    readonly status: 422 | 502 | 503 | 504,
    readonly code:
      | "invalid_input"
      | "provider_error"
      | "tool_unavailable"
      | "provider_timeout"
      | "fetch_failed"
      | "tool_timeout"
      | "resource_limit",
    message: string,
    readonly param?: string,
  ) {
    super(message);
  }
}
