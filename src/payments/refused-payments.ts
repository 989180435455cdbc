import type { Services } from "../services.js";
import { countEndpointUse, endpointLimitRefusal } from "../http/endpoint-limits.js";

/** Addresses remembered at once per process: past it the oldest are forgotten (each costs one more refusal to relearn). */
const MAX_BLOCKED = 10_000;

/**
 * Refused payments per client address, for keyless REST tool calls. A new payment is checked on
 * chain (the block and the transfer's simulation) before anything proves who sent it, so without
 * a limit anyone could make the gateway spend a paid RPC round trip per request with forged
 * authorizations, at HTTP speed, until the RPC's own limits refused the honest payers too. A
 * keyed caller is counted by its account's rate limit and an MCP caller per message by address;
 * this door had neither.
 *
 * Only refusals count (`x402-refused`, per client address, in the store: every process sees
 * them), so an honest payer's calls cost nothing more: no store round trip is added to a paid
 * call. An address past the limit is refused in this process, without the store, until a slot of
 * the window frees; another process learns it at its next refusal from there (one more RPC
 * round trip at most, per process). Held by `Payments` (`payments.refused`), one per process.
 */
export class RefusedPayments {
  /** Address → until when it is refused in this process. */
  private readonly blocked = new Map<string, number>();

  constructor(private readonly services: Pick<Services, "config" | "store">) {}

  /** 429 `rate_limited` for an address whose refused payments filled the window, before its payment is read. */
  check(address: string): void {
    const until = this.blocked.get(address);
    if (until === undefined) return;
    const left = until - Date.now();
    if (left <= 0) {
      this.blocked.delete(address);
      return;
    }
    throw endpointLimitRefusal(
      this.services,
      "x402-refused",
      "client address",
      left,
      " Retry with a valid payment once Retry-After has passed.",
    );
  }

  /** Counts one refused payment from `address`; past the limit, the address is refused from now on. */
  async count(address: string, requestId: string): Promise<void> {
    const hit = await countEndpointUse(this.services, "x402-refused", `ip:${address}`, requestId);
    // The refusal that filled the window is counted; the next one is refused before the chain.
    if (hit.remaining > 0 && hit.allowed) return;
    if (this.blocked.size >= MAX_BLOCKED) this.blocked.delete(this.blocked.keys().next().value!);
    this.blocked.set(address, Date.now() + Math.max(1000, hit.resetMs));
  }
}
