/**
 * The Toolgate client library: `new Toolgate({ apiKey | wallet })`, `ToolgateError`,
 * `verifyWebhook`, and the catalogue's generated types. No Node-only imports here: this entry
 * runs in Node 20+, browsers and edge runtimes.
 */
export { Toolgate, DEFAULT_BASE_URL, type ToolgateOptions } from "./client.js";
export { ToolgateError, type ClientErrorCode } from "./errors.js";
export { verifyWebhook, type VerifyWebhookOptions, type WebhookEvent } from "./verify-webhook.js";
export {
  DEFAULT_MAX_PER_CALL,
  DEFAULT_MAX_PER_SESSION,
  type SpendingLimits,
  type WalletAccount,
} from "./spending.js";
export type { CallOptions, CallResult, ToolSearch } from "./resources/tools.js";
export type { EventsPage, UsagePage } from "./resources/account.js";
export type { CursorPage, PagePromise } from "./pagination.js";
export type {
  Account,
  ApiError,
  BodyOf,
  ResponseOf,
  ToolCategory,
  ToolDescription,
  ToolInput,
  ToolName,
  ToolOutput,
} from "./types.js";
export type { components, operations, paths } from "./generated/openapi.js";
