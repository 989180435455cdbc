"""Walking a cursor-paged list (``GET /api/v1/events``, ``GET /api/v1/usage``) item by item.

The page after one is asked for only when the loop has used up that one, with the same filters and
its ``next_cursor``; the walk ends at a ``next_cursor`` of None. Nothing is asked for until the
first item is wanted (these are generators), as Stripe's ``auto_paging_iter``.
"""

from __future__ import annotations

from typing import AsyncIterator, Awaitable, Callable, Iterator, TypeVar

from ._types import Page

T = TypeVar("T")


def iterate(fetch_page: Callable[[str | None], Page[T]], cursor: str | None = None) -> Iterator[T]:
    """Every item of every page; ``fetch_page(cursor)`` loads the page at ``cursor``."""
    while True:
        page = fetch_page(cursor)
        yield from page.data
        if not page.next_cursor:
            return
        cursor = page.next_cursor


async def aiterate(fetch_page: Callable[[str | None], Awaitable[Page[T]]], cursor: str | None = None) -> AsyncIterator[T]:
    """``iterate`` for the asynchronous client: ``async for``."""
    while True:
        page = await fetch_page(cursor)
        for item in page.data:
            yield item
        if not page.next_cursor:
            return
        cursor = page.next_cursor
