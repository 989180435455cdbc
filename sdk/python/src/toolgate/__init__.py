"""Toolgate's Python client: call the gateway's tools with an API key or pay each call with x402.

    from toolgate import Toolgate

    client = Toolgate()  # TOOLGATE_API_KEY, TOOLGATE_BASE_URL from the environment
    client.tools.call("hash", {"text": "hello"})

``AsyncToolgate`` has the same surface, awaited. Agent-framework adapters live in
``toolgate.adapters`` (OpenAI, Anthropic, LangChain).
"""

from ._client import DEFAULT_BASE_URL, AsyncToolgate, Toolgate
from ._errors import ToolgateError
from ._payments import DEFAULT_MAX_PER_CALL, DEFAULT_MAX_PER_SESSION, SpendingLimits
from ._types import Account, Analytics, AnalyticsRow, ApiKey, CallResult, CreatedKey, Delivery, Event, LedgerEntry, Page, SentTest, Tool, ToolCategory, ToolPrice, Webhook
from .webhooks import verify_webhook

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_PER_CALL",
    "DEFAULT_MAX_PER_SESSION",
    "Account",
    "ApiKey",
    "AsyncToolgate",
    "CallResult",
    "CreatedKey",
    "Delivery",
    "Event",
    "LedgerEntry",
    "Analytics",
    "AnalyticsRow",
    "Page",
    "SentTest",
    "SpendingLimits",
    "Tool",
    "ToolCategory",
    "ToolPrice",
    "Toolgate",
    "ToolgateError",
    "Webhook",
    "verify_webhook",
]
