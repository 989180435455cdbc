/**
 * A cursor-paged list, Stripe's way: the list method's answer is the first page's promise, so
 * `await client.account.events()` is one page as before, and it is also async-iterable, so
 * `for await (const event of client.account.events({ type }))` walks every item. The pages after
 * the first are asked for one at a time, only when the loop has used up the one before, with the
 * same filters and the previous page's `next_cursor`; the walk ends at a `next_cursor` of null.
 */

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
): PagePromise<P, I> {
  const first = fetchPage(undefined);
  async function* items(): AsyncGenerator<I, void, undefined> {
    let page = await first;
    for (;;) {
      yield* page.data;
      if (!page.next_cursor) return;
      page = await fetchPage(page.next_cursor);
    }
  }
  return Object.assign(first, { [Symbol.asyncIterator]: items });
}
