"""Every API request the library makes, described once: path, body and how to read the answer.

The synchronous and asynchronous resources (``_resources.py``) are thin wrappers that run these
operations on their transport, so the two clients cannot drift apart.
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any
from urllib.parse import quote

from ._checks import check_idempotency_key, check_timeout
from ._errors import ToolgateError
from ._transport import Answer, Operation, header_int
from ._types import Account, Analytics, AnalyticsRow, ApiKey, CallResult, CreatedKey, Delivery, Event, LedgerEntry, Page, SentTest, Tool, ToolCategory, Webhook


def _seg(value: str) -> str:
    """An id or tool name as one path segment, the one way every path is built: encoded, and never
    "", "." or "..", which a URL resolves to another path (``keys.rotate("..")`` would post to
    /api/v1/rotate)."""
    if value in ("", ".", ".."):
        raise ToolgateError(
            status=0,
            code="invalid_argument",
            message=f'{json.dumps(value)} is not an id or tool name: a path segment cannot be empty, "." or "..".',
        )
    return quote(value, safe="")


def _data(answer: Answer, key: str = "data") -> list[Any]:
    """A list answer's ``data``: a TypeError (``invalid_response``) unless it is a list, as in TypeScript."""
    data = answer.body.get(key) if isinstance(answer.body, dict) else None
    if not isinstance(data, list):
        raise TypeError(key)
    return data


def _payment_response(answer: Answer) -> dict[str, Any] | None:
    header = answer.headers.get("payment-response") or answer.headers.get("x-payment-response")
    if not header:
        return None
    try:
        decoded = json.loads(base64.b64decode(header))
        return decoded if isinstance(decoded, dict) else None
    except ValueError:
        return None


def _server_timing(header: str | None) -> dict[str, float]:
    """A ``Server-Timing`` header (``name;dur=<ms>, …``): each metric's duration by name; one without a duration is left out."""
    durations: dict[str, float] = {}
    for metric in (header or "").split(","):
        name, *params = (part.strip() for part in metric.split(";"))
        dur = next((param[4:] for param in params if param.startswith("dur=")), None)
        try:
            if name and dur is not None:
                durations[name] = float(dur)
        except ValueError:
            pass
    return durations


def _call_result(answer: Answer) -> CallResult:
    timing = _server_timing(answer.headers.get("server-timing"))
    return CallResult(
        output=answer.body if isinstance(answer.body, dict) else {"value": answer.body},
        request_id=answer.headers.get("x-request-id"),
        credits_charged=header_int(answer.headers, "x-credits-charged"),
        credits_remaining=header_int(answer.headers, "x-credits-remaining"),
        replayed=answer.headers.get("idempotent-replayed") == "true",
        payment=_payment_response(answer),
        tool_ms=timing.get("tool"),
        payment_ms=timing.get("payment"),
        gateway_ms=timing.get("gateway"),
    )


# Tools ---------------------------------------------------------------------------------------


# The catalogue is public, but read with the key it also holds the account's own (custom) tools,
# which the key can call: the TypeScript library sends the key here too.
def list_tools(q: str | None = None, category: str | None = None) -> Operation[list[Tool]]:
    return Operation("GET", "/v1/tools", lambda a: [Tool.from_dict(t) for t in _data(a)], params={"q": q, "category": category})


def list_categories() -> Operation[list[ToolCategory]]:
    return Operation("GET", "/v1/tools/categories", lambda a: [ToolCategory.from_dict(c) for c in _data(a)])


def get_tool(name: str) -> Operation[Tool]:
    return Operation("GET", f"/v1/tools/{_seg(name)}", lambda a: Tool.from_dict(a.body))


def call_tool(
    name: str, input: dict[str, Any] | None, idempotency_key: str | None, timeout: float | None = None, max_retries: int | None = None
) -> Operation[CallResult]:
    # Every call carries an Idempotency-Key (made here unless the caller gives one), kept across
    # retries: the gateway runs and charges one key once. A key given is checked, never replaced:
    # an empty one is refused, as in TypeScript and the CLI.
    check_idempotency_key(idempotency_key)
    check_timeout(timeout)
    return Operation(
        "POST",
        f"/v1/tools/{_seg(name)}",
        _call_result,
        json=input if input is not None else {},
        idempotency_key=idempotency_key if idempotency_key is not None else f"tg-py-{uuid.uuid4()}",
        payable=True,
        timeout=timeout,
        max_retries=max_retries,
    )


# Account, keys, usage ------------------------------------------------------------------------


def get_account() -> Operation[Account]:
    return Operation("GET", "/api/v1/account", lambda a: Account.from_dict(a.body))


def set_spend_alert(credits: int) -> Operation[Account]:
    return Operation("PUT", "/api/v1/account/spend-alert", lambda a: Account.from_dict(a.body), json={"credits": credits})


def remove_spend_alert() -> Operation[Account]:
    return Operation("DELETE", "/api/v1/account/spend-alert", lambda a: Account.from_dict(a.body))


def list_events(
    limit: int | None, cursor: str | None = None, type: str | None = None, from_: str | None = None, to: str | None = None
) -> Operation[Page[Event]]:
    return Operation(
        "GET",
        "/api/v1/events",
        lambda a: Page([Event.from_dict(e) for e in _data(a)], (a.body or {}).get("next_cursor")),
        params={"limit": limit, "cursor": cursor, "type": type, "from": from_, "to": to},
    )


def list_keys() -> Operation[list[ApiKey]]:
    return Operation("GET", "/api/v1/keys", lambda a: [ApiKey.from_dict(k) for k in _data(a)])


def create_key(name: str | None, controls: dict[str, Any] | None = None) -> Operation[CreatedKey]:
    body: dict[str, Any] = {"name": name} if name else {}
    body.update(controls or {})
    return Operation("POST", "/api/v1/keys", lambda a: CreatedKey.from_dict(a.body), json=body)


def update_key(id: str, changes: dict[str, Any]) -> Operation[ApiKey]:
    return Operation("PATCH", f"/api/v1/keys/{_seg(id)}", lambda a: ApiKey.from_dict(a.body), json=changes)


def rotate_key(id: str, grace_seconds: int, name: str | None) -> Operation[CreatedKey]:
    body: dict[str, Any] = {"grace_seconds": grace_seconds}
    if name:
        body["name"] = name
    return Operation("POST", f"/api/v1/keys/{_seg(id)}/rotate", lambda a: CreatedKey.from_dict(a.body), json=body)


def revoke_key(id: str, force: bool) -> Operation[ApiKey]:
    return Operation("DELETE", f"/api/v1/keys/{_seg(id)}", lambda a: ApiKey.from_dict(a.body), params={"force": "true" if force else None})


def list_usage(
    limit: int | None,
    cursor: str | None,
    tool: str | None = None,
    key: str | None = None,
    kind: str | None = None,
    from_: str | None = None,
    to: str | None = None,
) -> Operation[Page[LedgerEntry]]:
    return Operation(
        "GET",
        "/api/v1/usage",
        lambda a: Page([LedgerEntry.from_dict(e) for e in _data(a)], (a.body or {}).get("next_cursor")),
        params={"limit": limit, "cursor": cursor, "tool": tool, "key": key, "kind": kind, "from": from_, "to": to},
    )


def get_analytics(
    from_: str | None, to: str | None, granularity: str | None, group_by: str | None
) -> Operation[Analytics]:
    def parse(a: Answer) -> Analytics:
        body = dict(a.body or {})
        rows = [AnalyticsRow.from_dict(r) for r in _data(a)]
        return Analytics(
            data=rows,
            granularity=body.get("granularity", ""),
            from_=body.get("from", ""),
            to=body.get("to", ""),
            group_by=body.get("group_by"),
            raw=body,
        )

    return Operation(
        "GET",
        "/api/v1/analytics",
        parse,
        params={"from": from_, "to": to, "granularity": granularity, "group_by": group_by},
    )


# Webhooks ------------------------------------------------------------------------------------


def register_webhook(url: str, events: list[str]) -> Operation[Webhook]:
    return Operation("POST", "/api/v1/webhooks/register", lambda a: Webhook.from_dict(a.body), json={"url": url, "events": list(events)})


def list_webhooks() -> Operation[list[Webhook]]:
    return Operation("GET", "/api/v1/webhooks", lambda a: [Webhook.from_dict(w) for w in _data(a)])


def delete_webhook(id: str) -> Operation[bool]:
    return Operation("DELETE", f"/api/v1/webhooks/{_seg(id)}", lambda a: bool((a.body or {}).get("deleted")))


def test_webhook(webhook_id: str | None) -> Operation[list[SentTest]]:
    return Operation(
        "POST",
        "/api/v1/webhooks/test",
        lambda a: [SentTest(s["webhook_id"], s["event_id"]) for s in _data(a, "sent")],
        json={"webhook_id": webhook_id} if webhook_id else {},
    )


def rotate_webhook_secret(id: str, overlap_seconds: int | None) -> Operation[Webhook]:
    body = {"overlap_seconds": overlap_seconds} if overlap_seconds is not None else {}
    return Operation("POST", f"/api/v1/webhooks/{_seg(id)}/rotate-secret", lambda a: Webhook.from_dict(a.body), json=body)


def list_deliveries(id: str) -> Operation[list[Delivery]]:
    return Operation("GET", f"/api/v1/webhooks/{_seg(id)}/deliveries", lambda a: [Delivery.from_dict(d) for d in _data(a)])


def resend_delivery(id: str, event_id: str) -> Operation[SentTest]:
    return Operation(
        "POST",
        f"/api/v1/webhooks/{_seg(id)}/deliveries/{_seg(event_id)}/resend",
        lambda a: SentTest(a.body["webhook_id"], a.body["event_id"]),
    )
