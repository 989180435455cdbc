import type { Services } from "../services.js";
import type { RateState } from "../store/types.js";
import {
  countEndpointUse,
  endpointLimitRefusal,
  endpointWindowHeaders,
  type EndpointLimitName,
} from "./endpoint-limits.js";

/** Addresses remembered at once per process: past it the oldest are forgotten (each costs one more refusal to relearn). */
const MAX_BLOCKED = 10_000;

/**
 * A limit that counts only refusals, per client address: for a door where each failed attempt
 * costs us a round trip (to the chain, to the store) before anything proves who is asking, so
 * that without a limit anyone could make the gateway spend one per request, at HTTP speed. Used
 * for keyless callers' refused x402 payments (`x402-refused`, payments.ts) and for requests whose
 * credentials are refused (`refused-credentials`, http/refused-credentials.ts).
 *
 * Only refusals count (in the store: every process sees them), so honest callers pay nothing
 * more: no store round trip is added to a request that succeeds. An address past the limit is
 * refused in this process, without the store, until a slot of the window frees; another process
 * learns it at its next refusal from there (one more failed attempt at most, per process).
 */
export class RefusalLimit {
  /** Address → until when it is refused in this process. */
  private readonly blocked = new Map<string, number>();
  /** When the last of those ends: past it, every entry is stale and all are let go at once. */
  private lastUntil = 0;

  constructor(
    private readonly services: Pick<Services, "config" | "store">,
    private readonly name: EndpointLimitName,
    /** Said after the limit in the 429's message: what to do instead of retrying as before. */
    private readonly advice: string,
  ) {}

  /** Whether any address is refused now: when none is, a caller need not even work out the address. */
  get blocking(): boolean {
    if (this.blocked.size === 0) return false;
    if (Date.now() < this.lastUntil) return true;
    // An address is otherwise let go only when it comes back: without this, one block ever made
    // the callers work out every request's address for the life of the process.
    this.blocked.clear();
    return false;
  }

  /** 429 `rate_limited` for an address whose refusals filled the window, before any work for it. */
  check(address: string): void {
    const until = this.blocked.get(address);
    if (until === undefined) return;
    const left = until - Date.now();
    if (left <= 0) {
      this.blocked.delete(address);
      return;
    }
    throw endpointLimitRefusal(this.services, this.name, "client address", left, this.advice);
  }

  /**
   * Counts one refusal for `address`; past the limit, the address is refused from now on. Answers
   * the window's RateLimit-* headers, for the refusal's answer.
   */
  async count(address: string, requestId: string): Promise<Record<string, string>> {
    const hit = await countEndpointUse(this.services, this.name, `ip:${address}`, requestId);
    const headers = endpointWindowHeaders(this.services, this.name, hit as RateState);
    // The refusal that filled the window is counted; the next one is refused before any work.
    if (hit.remaining > 0 && hit.allowed) return headers;
    if (this.blocked.size >= MAX_BLOCKED) this.blocked.delete(this.blocked.keys().next().value!);
    const until = Date.now() + Math.max(1000, hit.resetMs);
    this.blocked.set(address, until);
    this.lastUntil = Math.max(this.lastUntil, until);
    return headers;
  }
}
