"""Verifying a webhook delivery before trusting it.

The gateway signs every delivery twice, and either signature is accepted:

- ``X-Webhook-Signature: sha256=<hex>``: HMAC-SHA256 of the raw body, keyed by the whole secret
  string (``whsec_...``); the hex is compared as the bytes it spells (either case), as in TypeScript;
- the Standard Webhooks headers ``webhook-id``, ``webhook-timestamp``, ``webhook-signature``
  (``v1,<base64>`` HMAC-SHA256 of ``"<id>.<timestamp>.<body>"`` keyed by the secret's decoded
  bytes; several entries while a secret rotation overlaps).

Every comparison is constant-time (``hmac.compare_digest``). Freshness is judged on a signed
time: ``webhook-timestamp`` when the Standard Webhooks signature matched, else the body's own
``timestamp`` (inside the bytes ``X-Webhook-Signature`` covers).

The same rules as TypeScript's ``verifyWebhook``: header values and the secret are read without
surrounding whitespace; an empty secret is refused (``invalid_argument``: anybody can sign with
it); a signature is read only as the gateway writes it (padded base64, or hex); a signed
``webhook-timestamp`` that is not decimal Unix seconds, or a body ``timestamp`` that is not a
string, is ``webhook_timestamp_invalid``; a signed body that is not an event object is
``webhook_signature_invalid``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import math
import time
from datetime import datetime
from typing import Any, Mapping

from ._checks import _WHITESPACE, _invalid
from ._errors import ToolgateError
from ._types import Event

DEFAULT_TOLERANCE_SECONDS = 300


_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
"""Standard base64, padded, and nothing else: the form the gateway writes, and the only one
TypeScript's verifyWebhook reads."""
_UNIX_SECONDS = re.compile(r"[0-9]+")
"""Unix seconds as Standard Webhooks writes them: decimal digits only (no sign, point, hex)."""


def _header(headers: Any, name: str) -> str | None:
    """A header's value, surrounding whitespace removed (HTTP drops it; a plain dict may keep it)."""
    getter = getattr(headers, "get", None)
    value = getter(name) if getter else None
    if value is None and isinstance(headers, Mapping):
        value = next((v for k, v in headers.items() if isinstance(k, str) and k.lower() == name), None)
    if isinstance(value, (list, tuple)):
        value = " ".join(value)
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    return value.strip(_WHITESPACE) if isinstance(value, str) else None


def _fail(code: str, message: str) -> ToolgateError:
    return ToolgateError(status=0, code=code, message=message)


def _usable_secret(secret: Any) -> str:
    """The secret as used: surrounding whitespace removed (as an API key's: one read from a file or
    an environment file ends with a newline; a gateway secret never holds whitespace). An empty
    one, or ``whsec_`` with nothing after it, is refused: an HMAC keyed by nothing is one anybody
    can compute, so every forged delivery would verify."""
    if not isinstance(secret, str):
        raise _invalid("secret must be a string: the webhook's whsec_… secret, from registration or rotation.", "secret")
    trimmed = secret.strip(_WHITESPACE)
    if trimmed in ("", "whsec_"):
        what = "empty" if trimmed == "" else '"whsec_" with nothing after it'
        raise _invalid(
            f"secret is {what}: a signature keyed by an empty secret is one anybody can make, so no delivery can be verified with it. "
            "Pass the webhook's whsec_… secret, from registration or rotation (is the variable it is read from set?).",
            "secret",
        )
    return trimmed


def _spec_signature_matches(body: bytes, given: str | None, secret: str) -> bool:
    if not given:
        return False
    # The hex compared as the bytes it spells, as TypeScript's verifyWebhook does: upper-case hex
    # is the same signature.
    hex_digits = given[len("sha256="):]
    if not given.startswith("sha256=") or not re.fullmatch(r"(?:[0-9a-fA-F]{2})+", hex_digits):
        return False
    given_bytes = bytes.fromhex(hex_digits)
    expected = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).digest()
    return hmac.compare_digest(given_bytes, expected)


def _standard_signature_matches(body: bytes, headers: Any, secret: str) -> bool:
    msg_id, stamp, signatures = (_header(headers, n) for n in ("webhook-id", "webhook-timestamp", "webhook-signature"))
    if msg_id is None or stamp is None or not signatures:
        return False
    encoded = secret.removeprefix("whsec_")
    if not _BASE64.fullmatch(encoded):
        return False
    key = base64.b64decode(encoded)
    if not key:
        return False
    expected = base64.b64encode(hmac.new(key, f"{msg_id}.{stamp}.".encode("utf-8") + body, hashlib.sha256).digest())
    for entry in signatures.split(" "):
        version, _, signature = entry.partition(",")
        if version == "v1" and hmac.compare_digest(signature.encode("utf-8"), expected):
            return True
    return False


def verify_webhook(
    raw_body: bytes | str,
    headers: Mapping[str, Any] | Any,
    secret: str,
    *,
    tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
) -> Event:
    """Verifies a delivery and returns its event; raises ``ToolgateError`` otherwise.

    :param raw_body: the request body exactly as received (bytes; parse nothing before this).
    :param headers: the request headers (any mapping; names are matched case-insensitively).
    :param secret: the webhook's ``whsec_...`` secret, from registration or rotation.
    :param tolerance_seconds: how old (or how far in the future) a delivery may be.
    :param now: the time to judge freshness against (Unix seconds); default now.
    """
    secret = _usable_secret(secret)
    body = raw_body.encode("utf-8") if isinstance(raw_body, str) else bytes(raw_body)
    signed_at: float | None = None
    if _standard_signature_matches(body, headers, secret):
        stamp = _header(headers, "webhook-timestamp") or ""
        # Signed, yet not a time: refused as one, never read as something else.
        if not _UNIX_SECONDS.fullmatch(stamp):
            raise _fail("webhook_timestamp_invalid", "The webhook's webhook-timestamp is not a time in Unix seconds.")
        signed_at = float(stamp)
    elif not _spec_signature_matches(body, _header(headers, "x-webhook-signature"), secret):
        raise _fail("webhook_signature_invalid", "The webhook's signature does not match the body and secret.")

    try:
        parsed = json.loads(body)
    except ValueError:
        raise _fail("webhook_signature_invalid", "The webhook's body is not a Toolgate event.") from None
    # Signed, but not an event (as TypeScript refuses it).
    if not (
        isinstance(parsed, dict)
        and isinstance(parsed.get("id"), str)
        and isinstance(parsed.get("event"), str)
        and "timestamp" in parsed
        and isinstance(parsed.get("data"), dict)
    ):
        raise _fail("webhook_signature_invalid", "The webhook's body is not a Toolgate event.")
    if not isinstance(parsed["timestamp"], str):
        raise _fail("webhook_timestamp_invalid", "The webhook's timestamp is not a date.")
    event = Event.from_dict(parsed)

    if signed_at is None:
        try:
            signed_at = datetime.fromisoformat(event.timestamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise _fail("webhook_timestamp_invalid", "The webhook's timestamp is not a date.") from None
    age = (time.time() if now is None else now) - signed_at
    if math.isnan(age):
        raise _fail("webhook_timestamp_invalid", "The webhook's timestamp is not a date.")
    if abs(age) > tolerance_seconds:
        # Worded as the TypeScript library's verifyWebhook words it.
        when = f"{age:.0f} s ago" if age >= 0 else f"{-age:.0f} s in the future"
        cause = "a replay or a clock far off" if age >= 0 else "a clock far off"
        raise _fail("webhook_timestamp_invalid", f"The webhook was signed {when}, beyond the {tolerance_seconds:g} s tolerance ({cause}).")
    return event
