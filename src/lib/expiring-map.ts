/**
 * A Map whose entries lapse at their own time, as Redis keys with an expiry do. A lapsed entry is
 * never read back, and lapsed entries are dropped by one pass over the map at most once every
 * `sweepEveryMs`, on a write: an in-memory store that keeps a record per call (the debits a refund
 * looks up, Idempotency-Key records, payments) holds only what is still live, however long it runs,
 * at no cost to a call beyond the pass it sometimes makes.
 */
export class ExpiringMap<K, V> {
  private readonly entries = new Map<K, { value: V; until: number }>();
  private nextSweep: number;

  /** `now` is the store's clock (tests move it); `keepMs`, how long `set` keeps an entry by default. */
  constructor(
    private readonly now: () => number,
    private readonly keepMs = Number.POSITIVE_INFINITY,
    private readonly sweepEveryMs = 60_000,
  ) {
    this.nextSweep = now() + sweepEveryMs;
  }

  /** The value, unless it lapsed (then it is dropped). */
  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.until > this.now()) return entry.value;
    this.entries.delete(key);
    return undefined;
  }

  has(key: K): boolean {
    return this.get(key) !== undefined;
  }

  /** Keeps `value` under `key` until `until` (epoch ms; Infinity: until deleted). */
  set(key: K, value: V, until = this.now() + this.keepMs): this {
    this.entries.set(key, { value, until });
    this.sweepIfDue();
    return this;
  }

  /** Keeps the entry under `key` (if live) until `until` at least; never shortens it. */
  keepUntil(key: K, until: number): void {
    const entry = this.entries.get(key);
    if (entry && entry.until > this.now()) entry.until = Math.max(entry.until, until);
  }

  delete(key: K): boolean {
    return this.entries.delete(key);
  }

  /** The values still live. */
  *values(): IterableIterator<V> {
    const now = this.now();
    for (const entry of this.entries.values()) if (entry.until > now) yield entry.value;
  }

  private sweepIfDue(): void {
    const now = this.now();
    if (now < this.nextSweep) return;
    this.nextSweep = now + this.sweepEveryMs;
    for (const [key, entry] of this.entries) if (entry.until <= now) this.entries.delete(key);
  }
}
