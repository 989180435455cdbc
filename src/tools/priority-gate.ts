/**
 * A worker pool's concurrency limit with a priority queue (the Pro "priority queue" feature):
 * when every slot is busy, callers wait and are served highest priority first (Business, Pro,
 * Starter, Free), first come first served within a priority, for at most `timeoutMs`.
 *
 * With `perHolder`, one holder (an account) holds at most that many slots at once; its further
 * callers wait, and a free slot goes to the first waiter whose holder is under its share. Without
 * it, one account whose calls each run to their deadline — refunded, so at no cost to it — could
 * hold every slot and leave everyone else to time out in the queue.
 */
interface Waiter {
  priority: number;
  seq: number;
  holder: string;
  grant: () => void;
}

export class PoolBusyError extends Error {}

export class PriorityGate {
  private active = 0;
  private seq = 0;
  private readonly waiting: Waiter[] = [];
  /** Slots each holder has now (holders with none are not kept). */
  private readonly held = new Map<string, number>();

  constructor(
    readonly limit: number,
    private perHolder = limit,
  ) {}

  /** The most slots one holder may hold at once. */
  get share(): number {
    return this.perHolder;
  }

  /**
   * Changes one holder's share (the pool behind the gate told how many calls it really runs at
   * once). Holders over a smaller share keep their slots until they release them; a larger share
   * lets waiters in at once.
   */
  setShare(perHolder: number): void {
    this.perHolder = perHolder;
    this.grantWaiting();
  }

  get inFlight(): number {
    return this.active;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** Resolves with a release function once a slot is held; rejects with PoolBusyError after `timeoutMs`. */
  acquire(priority: number, timeoutMs: number, holder = ""): Promise<() => void> {
    // A free slot is never left while someone who may take it waits (see `grantWaiting`): a
    // free slot and a holder under its share mean no waiter comes first.
    if (this.active < this.limit && this.mayHold(holder)) return Promise.resolve(this.take(holder));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        priority,
        seq: this.seq++,
        holder,
        grant: () => {
          clearTimeout(timer);
          resolve(this.take(holder));
        },
      };
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        reject(new PoolBusyError(`no worker slot within ${timeoutMs} ms`));
      }, timeoutMs);
      // Keep the queue ordered: higher priority first, then arrival order.
      const at = this.waiting.findIndex((w) => w.priority < priority);
      this.waiting.splice(at === -1 ? this.waiting.length : at, 0, waiter);
    });
  }

  private mayHold(holder: string): boolean {
    return (this.held.get(holder) ?? 0) < this.perHolder;
  }

  private take(holder: string): () => void {
    this.active++;
    this.held.set(holder, (this.held.get(holder) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active--;
      const left = this.held.get(holder)! - 1;
      if (left === 0) this.held.delete(holder);
      else this.held.set(holder, left);
      this.grantWaiting();
    };
  }

  /** Hands free slots to waiters in queue order, passing over those whose holder has its share. */
  private grantWaiting(): void {
    for (let i = 0; i < this.waiting.length && this.active < this.limit; ) {
      const waiter = this.waiting[i]!;
      if (!this.mayHold(waiter.holder)) {
        i++;
        continue;
      }
      this.waiting.splice(i, 1);
      waiter.grant();
    }
  }
}
