"""The one error class of the library.

API errors carry the gateway's error object (``{type, code, message, param?, request_id}``);
errors raised on this side (network, timeout, spending cap, webhook verification) carry status 0
and a code of their own, the same codes as the TypeScript library.
"""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timezone
from typing import Any, Mapping

CLIENT_ERROR_CODES = (
    "network_error",
    "timeout",
    "spend_cap_exceeded",
    "payment_failed",
    "invalid_response",
    "invalid_argument",
    "webhook_signature_invalid",
    "webhook_timestamp_invalid",
)


class ToolgateError(Exception):
    """An error answer of the gateway, or a failure on the client's side (``status == 0``)."""

    status: int
    """The HTTP status, or 0 when the error arose in the client (no answer, refused to pay...)."""
    code: str
    """The gateway's stable error code (see the README's errors table), or a client-side code."""
    message: str
    param: str | None
    """The input field the error is about, as a dotted path, when the gateway names one."""
    request_id: str | None
    """The gateway's ``request_id`` (also the ``X-Request-Id`` header), for support requests."""
    retry_after: float | None
    """Seconds the gateway asked to wait (``Retry-After``), on 429 and 503."""
    body: dict[str, Any] | None
    """The whole error body: e.g. ``accepts`` (the x402 offer) on 402, ``required_tier`` on 403."""

    def __init__(
        self,
        *,
        status: int,
        code: str,
        message: str,
        param: str | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
        body: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.param = param
        self.request_id = request_id
        self.retry_after = retry_after
        self.body = body

    def __str__(self) -> str:
        where = f" (param {self.param})" if self.param else ""
        request = f" [{self.request_id}]" if self.request_id else ""
        return f"{self.status} {self.code}: {self.message}{where}{request}"

    def __repr__(self) -> str:
        return f"ToolgateError(status={self.status!r}, code={self.code!r}, message={self.message!r}, param={self.param!r}, request_id={self.request_id!r})"

    @classmethod
    def from_response(cls, status: int, headers: Mapping[str, str], text: str) -> "ToolgateError":
        """Builds the error from a non-2xx answer whose body has been read."""
        body: dict[str, Any] | None
        try:
            parsed = json.loads(text) if text else None
            body = parsed if isinstance(parsed, dict) else None
        except ValueError:
            body = None
        error = body.get("error") if body else None
        error = error if isinstance(error, dict) else {}

        def text_of(value: Any) -> str | None:
            return value if isinstance(value, str) else None

        return cls(
            status=status,
            code=text_of(error.get("code")) or f"http_{status}",
            message=text_of(error.get("message")) or (text[:200] if text else f"HTTP {status}"),
            param=text_of(error.get("param")),
            request_id=text_of(error.get("request_id")) or headers.get("x-request-id"),
            retry_after=retry_after_seconds(headers.get("retry-after")),
            body=body,
        )


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DAY = "(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_LONG_DAY = "(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
_MONTH = f"({'|'.join(_MONTHS)})"
_TIME = r"(\d{2}):(\d{2}):(\d{2})"
# RFC 9110's three HTTP-date forms, exactly (the TypeScript library's, sdk/typescript/src/errors.ts).
_IMF_FIXDATE = re.compile(rf"{_DAY}, (\d{{2}}) {_MONTH} (\d{{4}}) {_TIME} GMT", re.ASCII)
_RFC_850 = re.compile(rf"{_LONG_DAY}, (\d{{2}})-{_MONTH}-(\d{{2}}) {_TIME} GMT", re.ASCII)
_ASCTIME = re.compile(rf"{_DAY} {_MONTH} ([ \d]\d) {_TIME} (\d{{4}})", re.ASCII)
_DELTA_SECONDS = re.compile(r"\d+", re.ASCII)


def _http_date(value: str) -> float | None:
    """An HTTP-date as a POSIX timestamp, or None when it is not one (or names no real time)."""
    if m := _IMF_FIXDATE.fullmatch(value):
        year, month, day, hms = m[3], m[2], m[1], m.groups()[3:6]
    elif m := _RFC_850.fullmatch(value):
        # A two-digit year more than 50 years ahead is the last such year in the past (RFC 9110).
        now = datetime.now(timezone.utc).year
        y = now - now % 100 + int(m[3])
        year, month, day, hms = str(y - 100 if y > now + 50 else y), m[2], m[1], m.groups()[3:6]
    elif m := _ASCTIME.fullmatch(value):
        year, month, day, hms = m[6], m[1], m[2].strip(), m.groups()[2:5]
    else:
        return None
    hour, minute, second = (int(part) for part in hms)
    if hour > 23 or minute > 59 or second > 60:
        return None
    try:
        at = datetime(int(year), _MONTHS.index(month) + 1, int(day), hour, minute, min(second, 59), tzinfo=timezone.utc)
    except ValueError:  # 31 Feb
        return None
    return at.timestamp()


def retry_after_seconds(header: str | None) -> float | None:
    """``Retry-After`` as seconds (RFC 9110): delta-seconds, digits only, or an HTTP-date (the
    seconds until then, 0 when past). Anything else (``-5``, ``+5``, ``1e3``, ``1.5``, ``nan``,
    ``inf``, text) is as if there were no header: the backoff applies. The TypeScript library's
    ``retryAfterSeconds`` reads it alike."""
    if not header:
        return None
    value = header.strip(" \t")
    if _DELTA_SECONDS.fullmatch(value):
        return float(int(value))
    at = _http_date(value)
    return None if at is None else max(0.0, at - time.time())
