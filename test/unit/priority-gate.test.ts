import { describe, expect, it } from "vitest";
import { PoolBusyError, PriorityGate } from "../../src/tools/priority-gate.js";

/** The worker pool's concurrency limit: who is served first when every slot is busy. */
describe("PriorityGate", () => {
  it("admits callers at once while a slot is free", async () => {
    const gate = new PriorityGate(2);
    await gate.acquire(0, 100);
    await gate.acquire(0, 100);
    expect(gate.inFlight).toBe(2);
    expect(gate.queued).toBe(0);
  });

  it("serves waiting callers highest priority first, first come first served within a priority", async () => {
    const gate = new PriorityGate(1);
    const release = await gate.acquire(0, 1000);
    const order: string[] = [];
    // Each caller, once served, notes its turn and hands the slot on.
    const wait = (name: string, priority: number) =>
      gate.acquire(priority, 1000).then((done) => {
        order.push(name);
        done();
      });
    const waiting = [
      wait("free-1", 0),
      wait("pro-1", 2),
      wait("business", 3),
      wait("pro-2", 2),
      wait("free-2", 0),
    ];
    expect(gate.queued).toBe(5);
    release();
    await Promise.all(waiting);
    expect(order).toEqual(["business", "pro-1", "pro-2", "free-1", "free-2"]);
    expect(gate.inFlight).toBe(0);
  });

  it("refuses a caller that waited too long with PoolBusyError, and forgets it", async () => {
    const gate = new PriorityGate(1);
    const release = await gate.acquire(0, 1000);
    await expect(gate.acquire(1, 20)).rejects.toBeInstanceOf(PoolBusyError);
    expect(gate.queued).toBe(0);
    release();
    expect(gate.inFlight).toBe(0);
  });

  it("counts a release once however often it is called", async () => {
    const gate = new PriorityGate(1);
    const release = await gate.acquire(0, 100);
    release();
    release();
    expect(gate.inFlight).toBe(0);
    await gate.acquire(0, 100);
    expect(gate.inFlight).toBe(1);
  });
});
