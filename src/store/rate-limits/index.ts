import type { RateState } from "../types.js";

/** Sliding-window limits for what is not an account's own call admission (per address, per endpoint). */
export interface RateLimiter {
  /**
   * Sliding-window counter for things that are not an account (sign-ups per client address).
   * `count` hits (default 1: a keyless MCP batch counts each message) are admitted all or none,
   * in one step: a refusal counts nothing.
   */
  hitRateLimit(
    bucket: string,
    limit: number,
    windowMs: number,
    member: string,
    count?: number,
  ): Promise<RateState & { allowed: boolean }>;
  /** Gives back a hit that turned out not to count (a sign-up refused as a duplicate). */
  releaseRateLimit(bucket: string, member: string): Promise<void>;
}
