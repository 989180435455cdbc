/**
 * A cursor-paged list, Stripe's way: the list method's answer is the first page's promise, so
 * `await client.account.events()` is one page as before, and it is also async-iterable, so
 * `for await (const event of client.account.events({ type }))` walks every item. The pages after
 * the first are asked for one at a time, only when the loop has used up the one before, with the
 * same filters and the previous page's `next_cursor`; the walk ends at a `next_cursor` of null.
 * A cursor the walk has already used (a caching proxy, a gateway bug) would repeat the same pages
 * for ever: it ends the walk with `invalid_response`, as in Python.
 */
import { ToolgateError } from "./errors.js";

/** One page of a cursor-paged list, as the gateway answers it. */
export interface CursorPage<I> {
  data: I[];
  next_cursor?: string | null;
}

/** The first page (awaited), and every item of every page (`for await`). */
export type PagePromise<P extends CursorPage<I>, I = P["data"][number]> = Promise<P> &
  AsyncIterable<I>;

/**
 * `fetchPage(cursor)` loads the page at `cursor` (undefined: the caller's own starting cursor).
 * The first page is asked for at once, as an ordinary async method would; the loop reuses it, so
 * awaiting the answer and then walking it asks for the first page once.
 */
export function pagePromise<P extends CursorPage<I>, I = P["data"][number]>(
  fetchPage: (cursor: string | undefined) => Promise<P>,
  startCursor?: string,
): PagePromise<P, I> {
  const first = fetchPage(undefined);
  async function* items(): AsyncGenerator<I, void, undefined> {
    const seen = new Set(startCursor ? [startCursor] : []);
    let page = await first;
    for (;;) {
      yield* page.data;
      const next = page.next_cursor;
      if (!next) return;
      if (seen.has(next)) throw repeatedCursor(next);
      seen.add(next);
      page = await fetchPage(next);
    }
  }
  return Object.assign(first, { [Symbol.asyncIterator]: items });
}

/** The error that ends a walk handed back a cursor it has already used. */
function repeatedCursor(cursor: string): ToolgateError {
  return new ToolgateError({
    status: 0,
    code: "invalid_response",
    message: `The gateway answered the cursor ${JSON.stringify(cursor)} a second time: the walk would repeat the same pages for ever, so it stopped.`,
  });
}
