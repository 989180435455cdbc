"""``Toolgate(...)`` and ``AsyncToolgate(...)``: the clients, their options and their defaults."""

from __future__ import annotations

import os
from typing import Any

import httpx

from ._checks import check_timeout, normalise_api_key, normalise_base_url, normalise_headers
from ._payments import AsyncWalletPayer, SpendingLimits, WalletPayer
from ._resources import (
    AccountResource,
    AsyncAccountResource,
    AsyncKeys,
    AsyncTools,
    AsyncUsage,
    AsyncWebhooks,
    Keys,
    Tools,
    Usage,
    Webhooks,
)
from ._transport import AsyncTransport, Settings, SyncTransport

DEFAULT_BASE_URL = "http://localhost:8402"
DEFAULT_MAX_RETRIES = 2
DEFAULT_TIMEOUT = 60.0


def _settings(api_key: str | None, base_url: str | None, wallet: Any, max_retries: int, timeout: float, headers: dict[str, str] | None) -> Settings:
    # A wallet client pays per call: it does not pick up a key from the environment.
    if api_key is not None:
        key = normalise_api_key(api_key, "api_key")
    else:
        key = None if wallet is not None else normalise_api_key(os.environ.get("TOOLGATE_API_KEY") or None, "TOOLGATE_API_KEY")
    # Checked here, once: a URL without its scheme (``api.toolgate.example``, the usual slip in
    # TOOLGATE_BASE_URL) would otherwise be retried as a network error on every request, and one
    # with a line break pasted after it fail every request with httpx's InvalidURL.
    url = normalise_base_url(base_url or os.environ.get("TOOLGATE_BASE_URL") or DEFAULT_BASE_URL, "base_url" if base_url else "TOOLGATE_BASE_URL")
    check_timeout(timeout)
    return Settings(api_key=key, base_url=url.rstrip("/"), max_retries=max_retries, timeout=timeout, headers=normalise_headers(headers))


class Toolgate:
    """The synchronous client.

    :param api_key: ``x-api-key``; default ``TOOLGATE_API_KEY`` from the environment.
    :param base_url: default ``TOOLGATE_BASE_URL``, else ``http://localhost:8402``.
    :param wallet: an ``eth_account`` account (``Account.from_key(...)``): with no API key, each
        tool call is paid with x402 from it, within ``spending`` (default $0.10 per call, $1 per
        client).
    :param max_retries: retries on 429, 503 and network errors. Default 2.
    :param timeout: per-attempt timeout in seconds, for the attempt as a whole (sending to the
        answer's last byte), not per phase as httpx's. Default 60.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        wallet: Any = None,
        spending: SpendingLimits | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT,
        headers: dict[str, str] | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        settings = _settings(api_key, base_url, wallet, max_retries, timeout, headers)
        self.base_url = settings.base_url
        self._payer = WalletPayer(wallet, spending) if wallet is not None else None
        self._transport = SyncTransport(settings, self._payer, http_client)
        self.tools = Tools(self._transport)
        self.account = AccountResource(self._transport)
        self.keys = Keys(self._transport)
        self.usage = Usage(self._transport)
        self.webhooks = Webhooks(self._transport)

    @property
    def spent(self) -> int:
        """USDC atomic units this client's wallet has signed for so far (0 without a wallet)."""
        return self._payer.caps.spent if self._payer else 0

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> "Toolgate":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncToolgate:
    """The asynchronous client: the same options and methods as ``Toolgate``, awaited."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        wallet: Any = None,
        spending: SpendingLimits | None = None,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT,
        headers: dict[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        settings = _settings(api_key, base_url, wallet, max_retries, timeout, headers)
        self.base_url = settings.base_url
        self._payer = AsyncWalletPayer(wallet, spending) if wallet is not None else None
        self._transport = AsyncTransport(settings, self._payer, http_client)
        self.tools = AsyncTools(self._transport)
        self.account = AsyncAccountResource(self._transport)
        self.keys = AsyncKeys(self._transport)
        self.usage = AsyncUsage(self._transport)
        self.webhooks = AsyncWebhooks(self._transport)

    @property
    def spent(self) -> int:
        return self._payer.caps.spent if self._payer else 0

    async def aclose(self) -> None:
        await self._transport.close()

    async def __aenter__(self) -> "AsyncToolgate":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
