/**
 * The store's one failure its callers handle: Redis cannot be reached or did not answer in time.
 * The HTTP layer maps it to 503 `store_unavailable` (http/errors.ts) without knowing the store.
 */
export class StoreUnavailableError extends Error {}
