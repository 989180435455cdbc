import { describe, expect, it } from "vitest";
import { docsBuilder } from "../../src/pages/docs-builder.js";

/**
 * /docs and its worked examples (src/pages/docs-builder.ts), on an injected clock and a fake
 * example runner: which examples run when, and what a request waits for. Nothing here depends on
 * how long anything takes.
 */
const TOOLS = ["hash", "uuid", "web-fetch", "web-links"].map((name) => ({ name }));
const RETRY = { firstMs: 10_000, maxMs: 60_000 };

function setUp(failing: Set<string>) {
  let clock = 0;
  const runs: string[][] = [];
  /** The run in progress, held until the test lets it answer. */
  let release: (() => void) | null = null;
  let hold = false;
  const get = docsBuilder({
    examples: () => TOOLS,
    now: () => clock,
    retry: RETRY,
    run: async (tools) => {
      runs.push(tools.map((t) => t.name));
      if (hold) await new Promise<void>((r) => (release = r));
      return new Map(tools.filter((t) => !failing.has(t.name)).map((t) => [t.name, t.name]));
    },
    render: (answers) => [...answers.keys()].sort().join(","),
  });
  const settle = () => new Promise((r) => setImmediate(r));
  return {
    get,
    runs,
    advance: (ms: number) => {
      clock += ms;
    },
    holdRuns: () => {
      hold = true;
    },
    releaseRun: async () => {
      release?.();
      release = null;
      await settle();
    },
    settle,
  };
}

describe("/docs and its worked examples", () => {
  it("runs every example once for the first page, and none again when all answered", async () => {
    const docs = setUp(new Set());
    expect(await Promise.all([docs.get(), docs.get()])).toEqual([
      "hash,uuid,web-fetch,web-links",
      "hash,uuid,web-fetch,web-links",
    ]);
    docs.advance(24 * 3600_000);
    expect(await docs.get()).toBe("hash,uuid,web-fetch,web-links");
    expect(docs.runs).toEqual([["hash", "uuid", "web-fetch", "web-links"]]);
  });

  it("runs again only the examples that failed, in the background, less often each time", async () => {
    const failing = new Set(["web-fetch", "web-links"]);
    const docs = setUp(failing);
    expect(await docs.get()).toBe("hash,uuid");
    // Due after each delay (counted from the end of the last run), doubled at every failure:
    // 10 s, 20 s, 40 s, then 60 s the cap. Before it, nothing runs however many requests come;
    // then the failed two alone.
    for (const delay of [10_000, 20_000, 40_000, 60_000, 60_000]) {
      const before = docs.runs.length;
      docs.advance(delay - 1);
      for (let i = 0; i < 5; i++) expect(await docs.get()).toBe("hash,uuid");
      await docs.settle();
      expect(docs.runs.length, `before ${delay}`).toBe(before);
      docs.advance(1);
      await docs.get();
      await docs.settle();
      expect(docs.runs.length, `after ${delay}`).toBe(before + 1);
      expect(docs.runs.at(-1)).toEqual(["web-fetch", "web-links"]);
    }
    // Once they answer, the page has them and nothing runs again.
    failing.clear();
    docs.advance(60_000);
    expect(await docs.get()).toBe("hash,uuid");
    await docs.settle();
    expect(await docs.get()).toBe("hash,uuid,web-fetch,web-links");
    const runs = docs.runs.length;
    docs.advance(24 * 3600_000);
    await docs.get();
    await docs.settle();
    expect(docs.runs.length).toBe(runs);
  });

  it("never makes a request wait for a rebuild once a page exists, nor runs two at once", async () => {
    const failing = new Set(["web-fetch"]);
    const docs = setUp(failing);
    expect(await docs.get()).toBe("hash,uuid,web-links");
    docs.holdRuns();
    docs.advance(10_000);
    // The rebuild is held: every request is answered the last page meanwhile, and starts no other.
    for (let i = 0; i < 3; i++) expect(await docs.get()).toBe("hash,uuid,web-links");
    docs.advance(600_000);
    expect(await docs.get()).toBe("hash,uuid,web-links");
    expect(docs.runs).toEqual([["hash", "uuid", "web-fetch", "web-links"], ["web-fetch"]]);
    failing.clear();
    await docs.releaseRun();
    expect(await docs.get()).toBe("hash,uuid,web-fetch,web-links");
  });

  it("waits only for the first page; a first build that failed is tried again by the next request", async () => {
    let calls = 0;
    const get = docsBuilder({
      examples: () => TOOLS,
      now: () => 0,
      run: async () => new Map(),
      render: () => {
        calls++;
        if (calls === 1) throw new Error("render failed");
        return "page";
      },
    });
    await expect(get()).rejects.toThrow("render failed");
    expect(await get()).toBe("page");
  });
});
