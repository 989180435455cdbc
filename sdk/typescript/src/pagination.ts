/**
 * A cursor-paged list, Stripe's way: the list method's answer is the first page's promise, so
 * `await client.account.events()` is one page as before, and it is also async-iterable, so
 * `for await (const event of client.account.events({ type }))` walks every item. The pages after
 * the first are asked for one at a time, only when the loop has used up the one before, with the
 * same filters and the previous page's `next_cursor`; the walk ends at a `next_cursor` of null.
 * A cursor the walk has already used (a caching proxy, a gateway bug) would repeat the same pages
 * for ever: it ends the walk with `invalid_response`, as in Python. So does a run of
 * `MAX_EMPTY_PAGES` pages in a row with no items that still name a next cursor, each a new one.
 */
import { ToolgateError } from "./errors.js";

/**
 * Empty pages in a row, each still naming a next cursor, after which a walk stops (as Python's).
 * The gateway filters in its query, so a page it answers with no items is the last one (cursor
 * null); a server that filters after reading a window could answer a few. Ten is room for that
 * while a server that never ends (new cursors, no items) costs ten requests, not a loop for ever.
 */
export const MAX_EMPTY_PAGES = 10;

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
    let empty = 0;
    for (;;) {
      yield* page.data;
      const next = page.next_cursor;
      if (!next) return;
      if (seen.has(next)) throw repeatedCursor(next);
      empty = page.data.length === 0 ? empty + 1 : 0;
      if (empty >= MAX_EMPTY_PAGES) throw emptyPages();
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

/** The error that ends a walk handed `MAX_EMPTY_PAGES` empty pages in a row that claim more. */
function emptyPages(): ToolgateError {
  return new ToolgateError({
    status: 0,
    code: "invalid_response",
    message: `The gateway answered ${MAX_EMPTY_PAGES} pages in a row with no items, each naming a next page: the walk could go on for ever, so it stopped.`,
  });
}
