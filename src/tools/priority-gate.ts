/**
 * A worker pool's concurrency limit with a priority queue (the Pro "priority queue" feature):
 * when every slot is busy, callers wait and are served highest priority first (Business, Pro,
 * Starter, Free), first come first served within a priority, for at most `timeoutMs`.
 */
interface Waiter {
  priority: number;
  seq: number;
  grant: () => void;
}

export class PoolBusyError extends Error {}

export class PriorityGate {
  private active = 0;
  private seq = 0;
  private readonly waiting: Waiter[] = [];

  constructor(readonly limit: number) {}

  get inFlight(): number {
    return this.active;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** Resolves with a release function once a slot is held; rejects with PoolBusyError after `timeoutMs`. */
  acquire(priority: number, timeoutMs: number): Promise<() => void> {
    if (this.active < this.limit && this.waiting.length === 0) {
      this.active++;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        priority,
        seq: this.seq++,
        grant: () => {
          clearTimeout(timer);
          resolve(this.releaser());
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

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next)
        next.grant(); // the slot passes straight to the next caller
      else this.active--;
    };
  }
}
