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

  it("keeps one holder to its share: its further callers wait while another holder is served at once", async () => {
    const gate = new PriorityGate(4, 2);
    const a1 = await gate.acquire(0, 1000, "acct_a");
    await gate.acquire(0, 1000, "acct_a");
    let thirdServed = false;
    const third = gate.acquire(0, 1000, "acct_a").then((release) => {
      thirdServed = true;
      return release;
    });
    await gate.acquire(0, 1000, "acct_b"); // a free slot and b under its share: no wait
    expect(gate.inFlight).toBe(3);
    expect(gate.queued).toBe(1);
    expect(thirdServed).toBe(false);
    a1(); // a is under its share again: its waiter takes the slot
    (await third)();
    expect(thirdServed).toBe(true);
    expect(gate.inFlight).toBe(2);
  });

  it("passes a freed slot over waiters whose holder has its share, to the next in line", async () => {
    const gate = new PriorityGate(2, 1);
    const a = await gate.acquire(0, 1000, "acct_a");
    const b = await gate.acquire(0, 1000, "acct_b");
    const order: string[] = [];
    const wait = (name: string, holder: string, priority: number) =>
      gate.acquire(priority, 1000, holder).then((done) => {
        order.push(name);
        return done;
      });
    const a2 = wait("a2 (pro)", "acct_a", 2); // first in line, but a holds its one slot
    const c = wait("c (free)", "acct_c", 0);
    b(); // a still holds its share: the slot goes to c
    (await c)();
    expect(order).toEqual(["c (free)"]);
    a();
    (await a2)();
    expect(order).toEqual(["c (free)", "a2 (pro)"]);
    expect(gate.inFlight).toBe(0);
    expect(gate.queued).toBe(0);
  });

  it("times out a caller held back by its share like any other", async () => {
    const gate = new PriorityGate(2, 1);
    await gate.acquire(0, 1000, "acct_a");
    await expect(gate.acquire(0, 20, "acct_a")).rejects.toBeInstanceOf(PoolBusyError);
    expect(gate.queued).toBe(0);
    expect(gate.inFlight).toBe(1);
  });

  it("takes a new share from what runs behind it: a smaller one keeps held slots, a larger one lets waiters in", async () => {
    const gate = new PriorityGate(8, 4);
    const held = [await gate.acquire(0, 1000, "acct_a"), await gate.acquire(0, 1000, "acct_a")];
    gate.setShare(1);
    expect([gate.share, gate.inFlight]).toEqual([1, 2]);
    // Over its share, the account waits, however many of the gate's slots are free.
    const third = gate.acquire(0, 1000, "acct_a");
    expect(gate.queued).toBe(1);
    // Another account is under its share: served at once.
    (await gate.acquire(0, 100, "acct_b"))();
    gate.setShare(3);
    await third;
    expect([gate.queued, gate.inFlight]).toEqual([0, 3]);
    for (const release of held) release();
  });
});
