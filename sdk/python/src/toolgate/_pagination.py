"""Walking a cursor-paged list (``GET /api/v1/events``, ``GET /api/v1/usage``) item by item.

The page after one is asked for only when the loop has used up that one, with the same filters and
its ``next_cursor``; the walk ends at a ``next_cursor`` of None. Nothing is asked for until the
first item is wanted (these are generators), as Stripe's ``auto_paging_iter``. A cursor the walk
has already used (a caching proxy, a gateway bug) would repeat the same pages for ever: it ends
the walk with ``invalid_response``, as in TypeScript. So does a run of ``MAX_EMPTY_PAGES`` pages
in a row with no items that still name a next cursor, each a new one.
"""

from __future__ import annotations

import json
from typing import AsyncIterator, Awaitable, Callable, Iterator, TypeVar

from ._errors import ToolgateError
from ._types import Page

T = TypeVar("T")

MAX_EMPTY_PAGES = 10
"""Empty pages in a row, each still naming a next cursor, after which a walk stops (as TypeScript's).
The gateway filters in its query, so a page it answers with no items is the last one (cursor None);
a server that filters after reading a window could answer a few. Ten is room for that while a
server that never ends (new cursors, no items) costs ten requests, not a loop for ever."""


def iterate(fetch_page: Callable[[str | None], Page[T]], cursor: str | None = None) -> Iterator[T]:
    """Every item of every page; ``fetch_page(cursor)`` loads the page at ``cursor``."""
    seen: set[str] = {cursor} if cursor else set()
    empty = 0
    while True:
        page = fetch_page(cursor)
        yield from page.data
        if not page.next_cursor:
            return
        empty = 0 if page.data else empty + 1
        cursor = _next(page.next_cursor, seen, empty)


async def aiterate(fetch_page: Callable[[str | None], Awaitable[Page[T]]], cursor: str | None = None) -> AsyncIterator[T]:
    """``iterate`` for the asynchronous client: ``async for``."""
    seen: set[str] = {cursor} if cursor else set()
    empty = 0
    while True:
        page = await fetch_page(cursor)
        for item in page.data:
            yield item
        if not page.next_cursor:
            return
        empty = 0 if page.data else empty + 1
        cursor = _next(page.next_cursor, seen, empty)


def _next(cursor: str, seen: set[str], empty: int) -> str:
    """The next page's cursor, unless the walk has used it already or has had ``empty`` empty pages
    in a row (``MAX_EMPTY_PAGES`` ends it)."""
    if cursor in seen:
        raise ToolgateError(
            status=0,
            code="invalid_response",
            message=f"The gateway answered the cursor {json.dumps(cursor)} a second time: the walk would repeat the same pages for ever, so it stopped.",
        )
    if empty >= MAX_EMPTY_PAGES:
        raise ToolgateError(
            status=0,
            code="invalid_response",
            message=f"The gateway answered {MAX_EMPTY_PAGES} pages in a row with no items, each naming a next page: the walk could go on for ever, so it stopped.",
        )
    seen.add(cursor)
    return cursor
