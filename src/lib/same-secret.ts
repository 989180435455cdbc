import { createHash, timingSafeEqual } from "node:crypto";

/**
 * Whether two secrets are equal, compared in constant time as SHA-256 digests: neither where
 * they first differ nor their lengths show in the time taken.
 */
export const sameSecret = (a: string, b: string): boolean => timingSafeEqual(sha256(a), sha256(b));

const sha256 = (text: string) => createHash("sha256").update(text).digest();
