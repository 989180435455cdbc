"""Typed views of the gateway's answers (``/v1/tools`` and ``/api/v1``).

Each record keeps the answer it was made from in ``raw``, so fields the gateway adds later (the
API only ever adds fields within a version) are reachable before this library names them.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R", bound="_Record")


class _Record:
    """``from_dict``: the answer's fields this record names (absent optional ones take their
    defaults; an absent required one is a KeyError), and the whole answer in ``raw``."""

    @classmethod
    def from_dict(cls: type[R], d: dict[str, Any]) -> R:
        if not isinstance(d, dict):
            raise TypeError(cls.__name__)
        values: dict[str, Any] = {}
        for f in fields(cls):  # type: ignore[arg-type]
            if f.name == "raw":
                values["raw"] = d
            elif f.name in d:
                values[f.name] = d[f.name]
            elif f.default is MISSING and f.default_factory is MISSING:
                raise KeyError(f.name)
        return cls(**values)


@dataclass(frozen=True)
class ToolPrice:
    credits: int
    usd: str
    usdc_atomic: int
    """USDC atomic units (6 decimals) paid per call with x402."""


@dataclass(frozen=True)
class Tool:
    name: str
    aliases: list[str]
    title: str
    description: str
    price: ToolPrice
    available: bool
    endpoint: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    unavailable_reason: str | None = None
    category: str | None = None
    """One of ``tools.categories()``' names (None from a gateway that does not say)."""
    tags: list[str] = field(default_factory=list)
    """Search keywords (``tools.list(q=...)`` ranks on them); empty from a gateway that sends none."""
    private: bool = False
    """True: the calling account's own custom tool, seen and called by its keys only."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Tool":
        price = d.get("price") or {}
        return cls(
            name=d["name"],
            aliases=list(d.get("aliases") or []),
            title=d.get("title", d["name"]),
            description=d.get("description", ""),
            price=ToolPrice(credits=int(price.get("credits", 0)), usd=str(price.get("usd", "0")), usdc_atomic=int(price.get("usdc_atomic", "0"))),
            available=bool(d.get("available", True)),
            endpoint=d.get("endpoint", f"/v1/tools/{d['name']}"),
            input_schema=d.get("input_schema") or {"type": "object"},
            output_schema=d.get("output_schema") or {"type": "object"},
            unavailable_reason=d.get("unavailable_reason"),
            category=d.get("category"),
            tags=list(d.get("tags") or []),
            private=d.get("private") is True,
            raw=d,
        )


@dataclass(frozen=True)
class ToolCategory(_Record):
    """A category of the catalogue (``GET /v1/tools/categories``), for ``tools.list(category=...)``."""

    name: str
    description: str
    tools: int
    """How many public tools it holds."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class Account(_Record):
    id: str
    email: str | None
    email_verified: bool
    tier: str
    credits: int
    credits_low_threshold: int
    rate_limit_per_minute: int
    features: list[str]
    features_coming: list[str] = field(default_factory=list)
    """What the tier will include, announced but not built yet."""
    next_allowance_at: str | None = None
    plan_expires_at: str | None = None
    created_at: str | None = None
    spend: dict[str, Any] | None = None
    """This calendar month's spend: ``{"period": "month", "period_start", "credits"}``."""
    spend_alert: dict[str, Any] | None = None
    """``{"credits"}``: ``spend.threshold_reached`` fires once a month when the spend reaches it."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)



@dataclass(frozen=True)
class ApiKey(_Record):
    """A key as listed: never the key itself, only its prefix and last four characters."""

    id: str
    name: str | None
    prefix: str
    last4: str
    status: str
    """``active``, ``expiring`` (in a rotation's grace period), ``expired`` or ``revoked``."""
    created_at: str | None = None
    revoked_at: str | None = None
    last_used_at: str | None = None
    """When the key last authenticated a request, to the minute."""
    expires_at: str | None = None
    """When the key stops working (None: never)."""
    allowed_tools: list[str] | None = None
    """The only tools the key may call (None: every tool)."""
    budget: dict[str, Any] | None = None
    """The key's own budget: ``{"credits", "period": "day"|"month", "spent", "resets_at"}``."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)



@dataclass(frozen=True)
class CreatedKey:
    """A new key: ``key`` is the full secret, shown in this answer only."""

    key: str
    info: ApiKey
    replaced: ApiKey | None = None
    """On a rotation: the old key, now ``expiring`` or ``revoked``."""

    # The key's fields at the top too, as the gateway's answer and TypeScript's result have them.
    @property
    def id(self) -> str:
        return self.info.id

    @property
    def name(self) -> str | None:
        return self.info.name

    @property
    def prefix(self) -> str:
        return self.info.prefix

    @property
    def last4(self) -> str:
        return self.info.last4

    @property
    def status(self) -> str:
        return self.info.status

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CreatedKey":
        replaced = d.get("replaced")
        return cls(key=d["key"], info=ApiKey.from_dict(d), replaced=ApiKey.from_dict(replaced) if replaced else None)


@dataclass(frozen=True)
class LedgerEntry(_Record):
    id: str
    at: str
    kind: str
    """``grant``, ``purchase``, ``allowance``, ``debit`` or ``refund``."""
    amount: int
    """Signed: debits are negative."""
    balance: int
    reason: str
    request_id: str
    tool: str | None = None
    key_id: str | None = None
    """The API key whose call made the entry (debits and their refunds)."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)



@dataclass(frozen=True)
class AnalyticsRow(_Record):
    """One bucket (and group) of ``GET /api/v1/analytics``; latencies are None when no call has one."""

    bucket: str
    """The bucket's start (ISO 8601, UTC)."""
    calls: int
    credits: int
    errors: int
    group: str | None = None
    """The tool, key id or status (``group_by``); None without grouping."""
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class Analytics(_Record):
    """``GET /api/v1/analytics``: the buckets with calls, oldest first, and the range's totals (``raw["totals"]``)."""

    data: list[AnalyticsRow]
    granularity: str
    from_: str = ""
    """The range's start (the answer's ``from``)."""
    to: str = ""
    group_by: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def totals(self) -> dict[str, Any]:
        """Calls, credits, errors and p50/p95 latency over the whole range."""
        return dict(self.raw.get("totals") or {})


@dataclass(frozen=True)
class Page(Generic[T]):
    data: list[T]
    next_cursor: str | None = None


@dataclass(frozen=True)
class Event(_Record):
    """An account event (``GET /api/v1/events``), also the body of a webhook delivery."""

    id: str
    event: str
    timestamp: str
    data: dict[str, Any]
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)



@dataclass(frozen=True)
class Webhook(_Record):
    id: str
    url: str
    events: list[str]
    created_at: str
    previous_secret_expires_at: str | None = None
    secret: str | None = None
    """``whsec_...``: present only in the answers to register and rotate-secret."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)



@dataclass(frozen=True)
class Delivery(_Record):
    event_id: str
    event: str
    attempt: int
    at: str
    status: int | None
    duration_ms: int
    outcome: str
    """``delivered``, ``retrying`` or ``failed``."""
    error: str | None = None
    next_attempt_at: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)



@dataclass(frozen=True)
class SentTest:
    webhook_id: str
    event_id: str


@dataclass(frozen=True)
class CallResult:
    """A tool's output with what the call cost (``tools.call_with_details``)."""

    output: dict[str, Any]
    request_id: str | None
    credits_charged: int | None
    """``X-Credits-Charged`` (keyed calls and paid calls alike)."""
    credits_remaining: int | None
    replayed: bool
    """``Idempotent-Replayed``: the answer was stored by an earlier attempt with the same key."""
    payment: dict[str, Any] | None = None
    """The settlement (``PAYMENT-RESPONSE``: transaction, network, payer) when the call was paid with x402."""
    tool_ms: float | None = None
    """Milliseconds the tool's worker took (``Server-Timing: tool``); None for a replayed answer."""
    payment_ms: float | None = None
    """Milliseconds the call's x402 payment took: verified, settled on chain, credited (``Server-Timing: payment``)."""
    gateway_ms: float | None = None
    """Milliseconds the gateway took besides the tool and the payment (``Server-Timing: gateway``)."""
