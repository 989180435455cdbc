/**
 * When /docs is built, and what a request waits for. The page shows this gateway's own answers to
 * the tools' worked examples (tool-examples.ts), run against the workers when the page is first
 * asked for; that first request waits for them, as there is no page to show yet. An example that
 * failed then (a worker still warming up on a busy machine, a web tool on a gateway without
 * outbound network) is run again later, so that a passing failure does not leave the page without
 * its answer for the life of the process: only the examples that failed, each after its own delay,
 * doubled at every failure (10 s, 20 s, 40 s … up to 10 minutes), started by a request that finds
 * one due and run in the background. No request waits for a rebuild once a page exists: it is
 * served the last page built, and a later request the new one. So a page view costs at most the
 * failed examples, once per delay per process, and never a visitor's time.
 */
export const EXAMPLE_RETRY = { firstMs: 10_000, maxMs: 10 * 60_000 } as const;

export interface DocsBuilderOptions<T extends { name: string }> {
  /** The tools whose worked example the page shows. */
  examples: () => readonly T[];
  /** Runs these tools' examples: the answers of those that answered, by tool name. */
  run: (tools: T[]) => Promise<Map<string, unknown>>;
  /** The page, with the answers collected so far. */
  render: (answers: Map<string, unknown>) => string;
  now?: () => number;
  retry?: { firstMs: number; maxMs: number };
  /** A background rebuild that failed: the last page stays. */
  onError?: (err: unknown) => void;
}

/** The page, as a request gets it: awaited only while no page was ever built. */
export function docsBuilder<T extends { name: string }>(
  options: DocsBuilderOptions<T>,
): () => Promise<string> {
  const { examples, run, render, now = Date.now, retry = EXAMPLE_RETRY } = options;
  const answers = new Map<string, unknown>();
  /** The examples that failed, each with its current delay and when it is next run. */
  const failed = new Map<string, { delayMs: number; dueAt: number }>();
  let html: string | null = null;
  let building: Promise<void> | null = null;

  const build = async (tools: T[]) => {
    const got = await run(tools);
    const at = now();
    for (const tool of tools) {
      if (got.has(tool.name)) {
        answers.set(tool.name, got.get(tool.name));
        failed.delete(tool.name);
      } else {
        const before = failed.get(tool.name);
        const delayMs = before ? Math.min(before.delayMs * 2, retry.maxMs) : retry.firstMs;
        failed.set(tool.name, { delayMs, dueAt: at + delayMs });
      }
    }
    html = render(answers);
  };
  const start = (tools: T[]) => {
    const running = build(tools).finally(() => {
      building = null;
    });
    building = running;
    return running;
  };

  return async () => {
    if (html === null) {
      // No page yet: this request (and any arriving meanwhile) waits for the first build; one
      // that failed leaves no page, and the next request builds again.
      await (building ?? start([...examples()]));
      return html ?? render(answers);
    }
    if (!building && failed.size > 0) {
      const at = now();
      const due = examples().filter((tool) => (failed.get(tool.name)?.dueAt ?? Infinity) <= at);
      if (due.length > 0) start(due).catch((err) => options.onError?.(err));
    }
    return html;
  };
}
