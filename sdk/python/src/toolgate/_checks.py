"""What the client refuses before sending anything (``invalid_argument``, status 0).

The TypeScript library's rules too (sdk/typescript/src/checks.ts): a key or header that cannot be
sent as an HTTP header, an Idempotency-Key the gateway would not take, a base URL that is not an
http(s) URL or holds white space, a user name or password, a query or fragment, a timeout no
timer can keep. Messages never hold an API key or a password.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any
from urllib.parse import urlsplit

from ._errors import ToolgateError


def _invalid(message: str, param: str | None = None) -> ToolgateError:
    return ToolgateError(status=0, code="invalid_argument", message=message, param=param)


_IDEMPOTENCY_KEY = re.compile(r"[\x21-\x7e]{1,255}")
"""The gateway's rule for an Idempotency-Key (src/http/idempotency-key.ts): 1 to 255 printable
ASCII characters. An empty one is refused rather than replaced: a key the caller meant to reuse
across their own attempts would otherwise dedupe nothing, silently."""


def check_idempotency_key(key: str | None, name: str = "idempotency_key") -> None:
    if key is None:
        return
    if not isinstance(key, str) or not _IDEMPOTENCY_KEY.fullmatch(key):
        got = "an empty string" if key == "" else json.dumps(str(key)[:80])
        raise _invalid(f"{name} must be 1 to 255 printable ASCII characters, no spaces (got {got}); leave it out to have one made for the call.", name)


_WHITESPACE = " \t\r\n"
"""Whitespace a header value may carry around it (a key read from a file ends with a newline)."""
_NOT_PRINTABLE = re.compile(r"[^\x21-\x7e]")


def normalise_api_key(key: str | None, name: str) -> str | None:
    """The API key as sent: surrounding spaces, tabs and line breaks removed (the TypeScript
    library's fetch drops them; h11 refuses them), empty meaning none; any other character that is
    not printable ASCII is refused, naming its position but never the key."""
    if key is None:
        return None
    if not isinstance(key, str):
        raise _invalid(f"{name} must be a string.", name)
    trimmed = key.strip(_WHITESPACE)
    bad = _NOT_PRINTABLE.search(trimmed)
    if bad:
        raise _invalid(
            f"{name} cannot be sent as the x-api-key header: its character at position {bad.start() + 1} of {len(trimmed)} is not printable ASCII "
            "(the key is not shown here). Check how it was copied or read.",
            name,
        )
    return trimmed or None


_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")


def normalise_headers(headers: dict[str, str] | None) -> dict[str, str]:
    """The ``headers`` option, names lower-cased (so ``User-Agent`` replaces the default one rather
    than adding a second) and values trimmed; a name or value HTTP does not allow is refused,
    naming the header but not its value (it may be a secret)."""
    out: dict[str, str] = {}
    for name, value in (headers or {}).items():
        if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
            raise _invalid(f"headers: {json.dumps(str(name))} is not a valid HTTP header name.", "headers")
        if not isinstance(value, str) or not _HEADER_VALUE.fullmatch(value.strip(_WHITESPACE)):
            raise _invalid(f"headers: the value of {name} cannot be sent in a header (only printable ASCII; the value is not shown here).", "headers")
        out[name.lower()] = value.strip(_WHITESPACE)
    return out


MAX_TIMEOUT = 2_147_483.647
"""The TypeScript library's limit (setTimeout's 2^31 - 1 ms, about 24.8 days), in seconds."""


def check_timeout(value: Any, name: str = "timeout") -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0 or value > MAX_TIMEOUT:
        raise _invalid(f"{name} must be a number of seconds above 0 and at most {MAX_TIMEOUT} (about 24.8 days), got {value!r}.", name)


def redact_url(text: str) -> str:
    """A URL for a message, with whatever stands before its last "@" in place of a user name and
    password (``http://***@host/``): an invalid URL's parts cannot be told apart safely."""
    at = text.rfind("@")
    if at == -1:
        return text
    scheme = re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*://", text)
    start = min(scheme.end() if scheme else 0, at)
    return f"{text[:start]}***{text[at:]}"


_NOT_IN_A_BASE_URL = re.compile(r"[\x00-\x20\x7f-\x9f\u00a0\u1680\u2000-\u200b\u2028\u2029\u202f\u205f\u3000\ufeff]")
"""White space and control characters, none of which a base URL holds but by a slip (a pasted line
break, a space in a path). The parsers differ on them (urlsplit drops a tab or line break, and httpx
then refuses the URL it was given; the TypeScript library's URL drops the first and encodes a
space), so one inside the URL is refused rather than repaired either way."""


def normalise_base_url(text: str, name: str) -> str:
    """The base URL requests are sent to, checked once when the client is made, as the TypeScript
    library's (sdk/typescript/src/checks.ts normaliseBaseUrl): surrounding spaces, tabs and line
    breaks removed, as from an API key (a value read from an env file ends with a newline); refused
    unless it is ``http(s)://`` and a host (and a port that is one), with no white space or control
    character inside, no user name or password (httpx would send it as Basic auth to the gateway,
    which takes an API key, and the TypeScript library's fetch refuses it), and no query or
    fragment."""
    trimmed = str(text).strip(_WHITESPACE)
    got = repr(redact_url(trimmed))
    not_http = _invalid(f"{name} must be an http(s) URL such as https://toolgate.example (got {got}).", name)
    try:
        parts = urlsplit(trimmed)  # raises on an unclosed IPv6 address (``http://[::1``)
        parts.port  # raises on a port that is not a number from 0 to 65535
    except ValueError:
        raise not_http from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise not_http
    bad = _NOT_IN_A_BASE_URL.search(trimmed)
    if bad:
        raise _invalid(f"{name} must not hold white space or control characters (got {got}, one at position {bad.start() + 1}); write a space in a path as %20.", name)
    if parts.username is not None or parts.password is not None:
        raise _invalid(f"{name} must not hold a user name or password (got {got}): the gateway takes an API key; put a proxy's credentials in your http_client instead.", name)
    # Each request's path is added after the base URL, which put it inside a query or fragment here
    # (``http://h/gw?x=1`` sent to http://h/gw?x=1/api/…) and dropped the path before it in the
    # TypeScript library (http://h/api/…): either way, with the API key, outside the gateway at /gw.
    if "?" in trimmed or "#" in trimmed:
        raise _invalid(f"{name} must not hold a query (?…) or fragment (#…) (got {got}): give the gateway's address alone, such as https://toolgate.example/gw.", name)
    return trimmed
