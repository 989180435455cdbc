/**
 * The in-memory store, for the embedded mode (one process, no persistence): the shared state in
 * memory-state.ts and each concern's operations from its own folder (`<concern>/memory.ts`)
 * composed into one `Store`. Each operation runs to completion without awaiting, which is what
 * makes it atomic on Node's single thread.
 */
import { memoryAccounts } from "./accounts/memory.js";
import { memoryCredits } from "./credits/memory.js";
import { memoryCustomTools } from "./custom-tools/memory.js";
import { memoryIdempotency } from "./idempotency/memory.js";
import { memoryKeys } from "./keys/memory.js";
import { memoryLedger } from "./ledger/memory.js";
import { MemoryState, type MemoryStoreOptions } from "./memory-state.js";
import { memoryOutbox } from "./outbox/memory.js";
import { memoryPayments } from "./payments/memory.js";
import { memoryRateLimits } from "./rate-limits/memory.js";
import { memorySessions } from "./sessions/memory.js";
import { memoryOpenCharges } from "./open-charges/memory.js";
import { memorySingleUse } from "./single-use/memory.js";
import { memorySso } from "./sso/memory.js";
import type { Store } from "./types.js";
import { memoryWebhooks } from "./webhooks/memory.js";

export type { MemoryStoreOptions } from "./memory-state.js";

export function createMemoryStore(options: MemoryStoreOptions): Store {
  const state = new MemoryState(options);
  return {
    ...memoryAccounts(state),
    ...memoryKeys(state),
    ...memoryCredits(state),
    ...memoryLedger(state),
    ...memoryRateLimits(state),
    ...memoryOutbox(state),
    ...memoryIdempotency(state),
    ...memoryCustomTools(state),
    ...memoryWebhooks(),
    ...memoryPayments(state),
    ...memorySingleUse(state),
    ...memoryOpenCharges(),
    ...memorySso(),
    ...memorySessions(state),
    async ping() {},
    async close() {},
    requestsSent: () => 0,
  };
}
