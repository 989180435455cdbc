"""Walking a cursor-paged list (``GET /api/v1/events``, ``GET /api/v1/usage``) item by item.

The page after one is asked for only when the loop has used up that one, with the same filters and
its ``next_cursor``; the walk ends at a ``next_cursor`` of None. Nothing is asked for until the
first item is wanted (these are generators), as Stripe's ``auto_paging_iter``. A cursor the walk
has already used (a caching proxy, a gateway bug) would repeat the same pages for ever: it ends
the walk with ``invalid_response``, as in TypeScript.
"""

from __future__ import annotations

import json
from typing import AsyncIterator, Awaitable, Callable, Iterator, TypeVar

from ._errors import ToolgateError
from ._types import Page

T = TypeVar("T")


def iterate(fetch_page: Callable[[str | None], Page[T]], cursor: str | None = None) -> Iterator[T]:
    """Every item of every page; ``fetch_page(cursor)`` loads the page at ``cursor``."""
    seen: set[str] = {cursor} if cursor else set()
    while True:
        page = fetch_page(cursor)
        yield from page.data
        if not page.next_cursor:
            return
        cursor = _next(page.next_cursor, seen)


async def aiterate(fetch_page: Callable[[str | None], Awaitable[Page[T]]], cursor: str | None = None) -> AsyncIterator[T]:
    """``iterate`` for the asynchronous client: ``async for``."""
    seen: set[str] = {cursor} if cursor else set()
    while True:
        page = await fetch_page(cursor)
        for item in page.data:
            yield item
        if not page.next_cursor:
            return
        cursor = _next(page.next_cursor, seen)


def _next(cursor: str, seen: set[str]) -> str:
    """The next page's cursor, unless the walk has used it already."""
    if cursor in seen:
        raise ToolgateError(
            status=0,
            code="invalid_response",
            message=f"The gateway answered the cursor {json.dumps(cursor)} a second time: the walk would repeat the same pages for ever, so it stopped.",
        )
    seen.add(cursor)
    return cursor
