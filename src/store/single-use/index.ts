/** Values used once or settled once: sign-in nonces, single-use records, first-writer-wins settings, leases. */
export interface SingleUseStore {
  /** A single-use token (a sign-in nonce): saved with a lifetime, consumed at most once. */
  saveNonce(name: string, ttlMs: number): Promise<void>;
  consumeNonce(name: string): Promise<boolean>;
  /**
   * A value kept for at most `ttlMs` and read at most once (a sign-in attempt's secrets): `takeOnce`
   * returns it and deletes it in one step, so two readers racing get it once between them.
   */
  saveOnce(name: string, value: string, ttlMs: number): Promise<void>;
  takeOnce(name: string): Promise<string | null>;
  /**
   * The value first offered under `name`, kept for good: a setting every process of a
   * deployment must agree on (the development secret key), decided by whoever offers first.
   */
  keepFirst(name: string, candidate: string): Promise<string>;
  /** A lease shared by every process (null when someone else holds it); released by its token. */
  acquireLock(name: string, ttlMs: number): Promise<string | null>;
  releaseLock(name: string, token: string): Promise<void>;
}
