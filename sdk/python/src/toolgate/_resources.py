"""The client's resources (``tools``, ``account``, ``keys``, ``usage``, ``webhooks``), sync and async.

Each method only runs an operation from ``_operations.py``; the pairs differ in ``await`` alone.
"""

from __future__ import annotations

import builtins
from typing import Any, AsyncIterator, Iterator

from . import _operations as ops
from ._pagination import aiterate, iterate
from ._transport import AsyncTransport, SyncTransport
from ._types import Account, Analytics, ApiKey, CallResult, CreatedKey, Delivery, Event, LedgerEntry, Page, SentTest, Tool, ToolCategory, Webhook


class Tools:
    def __init__(self, transport: SyncTransport) -> None:
        self._t = transport

    def list(self, *, q: str | None = None, category: str | None = None) -> builtins.list[Tool]:
        """The catalogue: every tool with its price, availability and JSON Schemas. With ``q``, the
        gateway's ranked search over names, tags and descriptions (best first); with ``category``
        (a name from ``categories()``), only that category's tools."""
        return self._t.run(ops.list_tools(q, category))

    def categories(self) -> builtins.list[ToolCategory]:
        """The catalogue's categories: name, description and number of tools."""
        return self._t.run(ops.list_categories())

    def get(self, name: str) -> Tool:
        return self._t.run(ops.get_tool(name))

    def call(
        self, name: str, input: dict[str, Any] | None = None, *, idempotency_key: str | None = None, timeout: float | None = None, max_retries: int | None = None
    ) -> dict[str, Any]:
        """Runs a tool and returns its output object. Raises ``ToolgateError`` on any failure.
        ``timeout`` (seconds per attempt) and ``max_retries`` override the client's for this call."""
        return self.call_with_details(name, input, idempotency_key=idempotency_key, timeout=timeout, max_retries=max_retries).output

    def call_with_details(
        self, name: str, input: dict[str, Any] | None = None, *, idempotency_key: str | None = None, timeout: float | None = None, max_retries: int | None = None
    ) -> CallResult:
        """Like ``call``, with what the call cost, its request id and the x402 settlement."""
        return self._t.run(ops.call_tool(name, input, idempotency_key, timeout, max_retries))


class AsyncTools:
    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def list(self, *, q: str | None = None, category: str | None = None) -> builtins.list[Tool]:
        return await self._t.run(ops.list_tools(q, category))

    async def categories(self) -> builtins.list[ToolCategory]:
        return await self._t.run(ops.list_categories())

    async def get(self, name: str) -> Tool:
        return await self._t.run(ops.get_tool(name))

    async def call(
        self, name: str, input: dict[str, Any] | None = None, *, idempotency_key: str | None = None, timeout: float | None = None, max_retries: int | None = None
    ) -> dict[str, Any]:
        return (await self.call_with_details(name, input, idempotency_key=idempotency_key, timeout=timeout, max_retries=max_retries)).output

    async def call_with_details(
        self, name: str, input: dict[str, Any] | None = None, *, idempotency_key: str | None = None, timeout: float | None = None, max_retries: int | None = None
    ) -> CallResult:
        return await self._t.run(ops.call_tool(name, input, idempotency_key, timeout, max_retries))


class AccountResource:
    def __init__(self, transport: SyncTransport) -> None:
        self._t = transport

    def get(self) -> Account:
        return self._t.run(ops.get_account())

    def set_spend_alert(self, credits: int) -> Account:
        """``spend.threshold_reached`` fires once a month when the month's spend reaches ``credits``."""
        return self._t.run(ops.set_spend_alert(credits))

    def remove_spend_alert(self) -> Account:
        """Removes the spend alert (not repeated after a lost answer: a second removal is a 404)."""
        return self._t.run(ops.remove_spend_alert())

    def events(
        self, limit: int | None = None, *, type: str | None = None, from_: str | None = None, to: str | None = None
    ) -> builtins.list[Event]:
        """The account's events, newest first (one page); ``type`` keeps one event type,
        ``from_``/``to`` are ISO 8601 times. ``events_page`` pages on with a cursor."""
        return self._t.run(ops.list_events(limit, None, type, from_, to)).data

    def events_page(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        type: str | None = None,
        from_: str | None = None,
        to: str | None = None,
    ) -> Page[Event]:
        """One page of events; pass its ``next_cursor`` as ``cursor`` for the next."""
        return self._t.run(ops.list_events(limit, cursor, type, from_, to))

    def iter_events(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        type: str | None = None,
        from_: str | None = None,
        to: str | None = None,
    ) -> Iterator[Event]:
        """Every event, newest first, page after page (``limit`` per page) with the same filters;
        each page is asked for when the loop reaches it."""
        return iterate(lambda at: self._t.run(ops.list_events(limit, at, type, from_, to)), cursor)


class AsyncAccountResource:
    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def get(self) -> Account:
        return await self._t.run(ops.get_account())

    async def set_spend_alert(self, credits: int) -> Account:
        return await self._t.run(ops.set_spend_alert(credits))

    async def remove_spend_alert(self) -> Account:
        return await self._t.run(ops.remove_spend_alert())

    async def events(
        self, limit: int | None = None, *, type: str | None = None, from_: str | None = None, to: str | None = None
    ) -> builtins.list[Event]:
        return (await self._t.run(ops.list_events(limit, None, type, from_, to))).data

    async def events_page(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        type: str | None = None,
        from_: str | None = None,
        to: str | None = None,
    ) -> Page[Event]:
        return await self._t.run(ops.list_events(limit, cursor, type, from_, to))

    def iter_events(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        type: str | None = None,
        from_: str | None = None,
        to: str | None = None,
    ) -> AsyncIterator[Event]:
        """``async for``: every event, page after page, as ``Toolgate``'s ``iter_events``."""
        return aiterate(lambda at: self._t.run(ops.list_events(limit, at, type, from_, to)), cursor)


def _controls(
    expires_at: str | None, allowed_tools: list[str] | None, budget: dict[str, Any] | None
) -> dict[str, Any]:
    """The account controls given (those left as None are not sent)."""
    given = {"expires_at": expires_at, "allowed_tools": allowed_tools, "budget": budget}
    return {k: v for k, v in given.items() if v is not None}


class Keys:
    def __init__(self, transport: SyncTransport) -> None:
        self._t = transport

    def list(self) -> builtins.list[ApiKey]:
        return self._t.run(ops.list_keys())

    def create(
        self,
        name: str | None = None,
        *,
        expires_at: str | None = None,
        allowed_tools: builtins.list[str] | None = None,
        budget: dict[str, Any] | None = None,
    ) -> CreatedKey:
        """Another key, optionally with account controls: ``expires_at`` (ISO 8601),
        ``allowed_tools`` (tool names), ``budget`` (``{"credits": 500, "period": "day"}``)."""
        return self._t.run(ops.create_key(name, _controls(expires_at, allowed_tools, budget)))

    def update(self, id: str, **changes: Any) -> ApiKey:
        """Changes ``name``, ``expires_at``, ``allowed_tools`` or ``budget``; None removes a control.
        A control on the account's last active key (the last one without controls) is refused,
        409 ``last_active_key``."""
        return self._t.run(ops.update_key(id, changes))

    def rotate(self, id: str, *, grace_seconds: int = 0, name: str | None = None) -> CreatedKey:
        """A new key now; the old one stops at once (``grace_seconds=0``) or after the grace period.
        A client using the rotated key should switch: ``Toolgate(api_key=created.key)``."""
        return self._t.run(ops.rotate_key(id, grace_seconds, name))

    def revoke(self, id: str, *, force: bool = False) -> ApiKey:
        """Revokes a key at once. The account's last active key is kept (409 ``last_active_key``)
        unless ``force=True``."""
        return self._t.run(ops.revoke_key(id, force))


class AsyncKeys:
    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def list(self) -> builtins.list[ApiKey]:
        return await self._t.run(ops.list_keys())

    async def create(
        self,
        name: str | None = None,
        *,
        expires_at: str | None = None,
        allowed_tools: builtins.list[str] | None = None,
        budget: dict[str, Any] | None = None,
    ) -> CreatedKey:
        return await self._t.run(ops.create_key(name, _controls(expires_at, allowed_tools, budget)))

    async def update(self, id: str, **changes: Any) -> ApiKey:
        return await self._t.run(ops.update_key(id, changes))

    async def rotate(self, id: str, *, grace_seconds: int = 0, name: str | None = None) -> CreatedKey:
        return await self._t.run(ops.rotate_key(id, grace_seconds, name))

    async def revoke(self, id: str, *, force: bool = False) -> ApiKey:
        return await self._t.run(ops.revoke_key(id, force))


class Usage:
    def __init__(self, transport: SyncTransport) -> None:
        self._t = transport

    def list(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        tool: str | None = None,
        key: str | None = None,
        kind: str | None = None,
        from_: str | None = None,
        to: str | None = None,
    ) -> Page[LedgerEntry]:
        """One page of the ledger, newest first; pass ``next_cursor`` back for the next page.
        ``tool``, ``key`` (a key id) and ``kind`` keep those entries; ``from_`` (inclusive) and
        ``to`` are ISO 8601 times."""
        return self._t.run(ops.list_usage(limit, cursor, tool, key, kind, from_, to))

    def iter_entries(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        tool: str | None = None,
        key: str | None = None,
        kind: str | None = None,
        from_: str | None = None,
        to: str | None = None,
    ) -> Iterator[LedgerEntry]:
        """Every ledger entry, newest first, page after page (``limit`` per page) with the same
        filters as ``list``; each page is asked for when the loop reaches it."""
        return iterate(lambda at: self._t.run(ops.list_usage(limit, at, tool, key, kind, from_, to)), cursor)

    def analytics(
        self,
        *,
        from_: str | None = None,
        to: str | None = None,
        granularity: str | None = None,
        group_by: str | None = None,
    ) -> Analytics:
        """Pro and Business: calls, credits, errors and p50/p95 latency per UTC ``hour`` or ``day``,
        optionally split by ``tool``, ``key`` or ``status``; ``from_``/``to`` are ISO 8601 times."""
        return self._t.run(ops.get_analytics(from_, to, granularity, group_by))


class AsyncUsage:
    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def list(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        tool: str | None = None,
        key: str | None = None,
        kind: str | None = None,
        from_: str | None = None,
        to: str | None = None,
    ) -> Page[LedgerEntry]:
        return await self._t.run(ops.list_usage(limit, cursor, tool, key, kind, from_, to))

    def iter_entries(
        self,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        tool: str | None = None,
        key: str | None = None,
        kind: str | None = None,
        from_: str | None = None,
        to: str | None = None,
    ) -> AsyncIterator[LedgerEntry]:
        """``async for``: every ledger entry, page after page, as ``Toolgate``'s ``iter_entries``."""
        return aiterate(lambda at: self._t.run(ops.list_usage(limit, at, tool, key, kind, from_, to)), cursor)

    async def analytics(
        self,
        *,
        from_: str | None = None,
        to: str | None = None,
        granularity: str | None = None,
        group_by: str | None = None,
    ) -> Analytics:
        return await self._t.run(ops.get_analytics(from_, to, granularity, group_by))


class Webhooks:
    def __init__(self, transport: SyncTransport) -> None:
        self._t = transport

    def register(self, url: str, events: builtins.list[str]) -> Webhook:
        """Registers an HTTPS endpoint; the answer's ``secret`` is shown this once."""
        return self._t.run(ops.register_webhook(url, events))

    def list(self) -> builtins.list[Webhook]:
        return self._t.run(ops.list_webhooks())

    def delete(self, id: str) -> bool:
        return self._t.run(ops.delete_webhook(id))

    def test(self, webhook_id: str | None = None) -> builtins.list[SentTest]:
        """Sends a ``webhook.test`` event to one webhook, or to all of them."""
        return self._t.run(ops.test_webhook(webhook_id))

    def rotate_secret(self, id: str, *, overlap_seconds: int | None = None) -> Webhook:
        return self._t.run(ops.rotate_webhook_secret(id, overlap_seconds))

    def deliveries(self, id: str) -> builtins.list[Delivery]:
        return self._t.run(ops.list_deliveries(id))

    def resend(self, id: str, event_id: str) -> SentTest:
        return self._t.run(ops.resend_delivery(id, event_id))


class AsyncWebhooks:
    def __init__(self, transport: AsyncTransport) -> None:
        self._t = transport

    async def register(self, url: str, events: builtins.list[str]) -> Webhook:
        return await self._t.run(ops.register_webhook(url, events))

    async def list(self) -> builtins.list[Webhook]:
        return await self._t.run(ops.list_webhooks())

    async def delete(self, id: str) -> bool:
        return await self._t.run(ops.delete_webhook(id))

    async def test(self, webhook_id: str | None = None) -> builtins.list[SentTest]:
        return await self._t.run(ops.test_webhook(webhook_id))

    async def rotate_secret(self, id: str, *, overlap_seconds: int | None = None) -> Webhook:
        return await self._t.run(ops.rotate_webhook_secret(id, overlap_seconds))

    async def deliveries(self, id: str) -> builtins.list[Delivery]:
        return await self._t.run(ops.list_deliveries(id))

    async def resend(self, id: str, event_id: str) -> SentTest:
        return await self._t.run(ops.resend_delivery(id, event_id))
