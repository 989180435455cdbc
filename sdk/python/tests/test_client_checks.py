"""What the client refuses before sending anything, as the TypeScript library does
(test/sdk/typescript/idempotency-key-never-dropped.test.ts, secrets-stay-out-of-errors.test.ts,
headers-option-replaces-defaults.test.ts, client-side-errors-classified.test.ts): an
Idempotency-Key the gateway would not take (never dropped nor replaced while the call is
retried), an API key a header cannot carry (refused naming its position, never the key; one read
from a file is sent without its newline), a base URL with user:password@ (refused without the
password), with white space around it (trimmed, as around a key) or inside it (refused), a
query or fragment, or that httpx cannot use, a header HTTP does not allow, a timeout no timer can keep. And the ``headers``
option replaces a default header whatever the case of its name. Real local servers on loopback."""

from __future__ import annotations

import math
from typing import Any, Iterator

import pytest

from scripted import CALLED, ScriptedServer
from toolgate import AsyncToolgate, Toolgate, ToolgateError

KEY = "tg_live_a2y8kvpgy7pocc56_t86sTMf9h0Z4SJfB5OTOdLBZDAvEaEYC"
PASSWORD = "pr0xy-S3CRET"


@pytest.fixture
def lost_then_answered() -> Iterator[ScriptedServer]:
    """First attempt: the connection closes with no answer (lost); the retry is answered."""
    server = ScriptedServer(lambda request, n: "reset" if n == 0 else CALLED)
    yield server
    server.close()


@pytest.fixture
def answering() -> Iterator[ScriptedServer]:
    server = ScriptedServer(lambda request, n: (200, {}, {"data": []}))
    yield server
    server.close()


def raised(run: Any) -> ToolgateError:
    with pytest.raises(ToolgateError) as caught:
        run()
    return caught.value


BAD_IDEMPOTENCY_KEYS = [("empty", ""), ("spaces", "   "), ("surrounded", " key-1 "), ("not_ascii", "clé"), ("too_long", "k" * 256)]


@pytest.mark.parametrize("key", [k for _, k in BAD_IDEMPOTENCY_KEYS], ids=[n for n, _ in BAD_IDEMPOTENCY_KEYS])
def test_an_idempotency_key_the_gateway_would_not_take_is_refused_before_any_request(lost_then_answered, key):
    client = Toolgate(api_key=KEY, base_url=lost_then_answered.url)
    error = raised(lambda: client.tools.call("hash", {"text": "x"}, idempotency_key=key))
    assert (error.status, error.code, error.param) == (0, "invalid_argument", "idempotency_key")
    assert lost_then_answered.received == []


async def test_the_async_client_refuses_an_empty_idempotency_key_too(lost_then_answered):
    async with AsyncToolgate(api_key=KEY, base_url=lost_then_answered.url) as client:
        with pytest.raises(ToolgateError) as caught:
            await client.tools.call("hash", {"text": "x"}, idempotency_key="")
    assert (caught.value.code, caught.value.param) == ("invalid_argument", "idempotency_key")
    assert lost_then_answered.received == []


def test_a_key_given_or_made_is_sent_on_every_attempt(lost_then_answered):
    client = Toolgate(api_key=KEY, base_url=lost_then_answered.url)
    client.tools.call("hash", {"text": "x"}, idempotency_key="my-key-123")
    assert [r.header("idempotency-key") for r in lost_then_answered.received] == ["my-key-123", "my-key-123"]


@pytest.mark.parametrize("key", [KEY + "\n", KEY + "\r\n", " \t" + KEY + " "], ids=["newline", "crlf", "spaces"])
def test_an_api_key_read_from_a_file_is_sent_without_its_surrounding_whitespace(answering, key):
    Toolgate(api_key=key, base_url=answering.url).keys.list()
    assert answering.received[0].header("x-api-key") == KEY


@pytest.mark.parametrize(
    "key",
    [KEY[:10] + "\n" + KEY[10:], KEY + "\u200b", KEY + "é", KEY[:10] + " " + KEY[10:]],
    ids=["inner_newline", "zero_width_space", "non_ascii", "inner_space"],
)
def test_an_api_key_a_header_cannot_carry_is_refused_when_the_client_is_made_without_the_key(key):
    for make in (Toolgate, AsyncToolgate):
        error = raised(lambda: make(api_key=key, base_url="http://127.0.0.1:9"))
        assert (error.status, error.code, error.param) == (0, "invalid_argument", "api_key")
        assert "not printable ASCII" in error.message
        assert KEY[8:30] not in str(error) and KEY[8:30] not in repr(error)


def test_an_api_key_from_the_environment_with_a_bad_character_is_refused_naming_the_variable(monkeypatch):
    monkeypatch.setenv("TOOLGATE_API_KEY", KEY + "\u00a0")
    error = raised(lambda: Toolgate(base_url="http://127.0.0.1:9"))
    assert (error.code, error.param) == ("invalid_argument", "TOOLGATE_API_KEY")
    assert KEY[8:30] not in error.message


def test_a_base_url_with_user_and_password_is_refused_without_the_password():
    for make in (Toolgate, AsyncToolgate):
        error = raised(lambda: make(api_key=KEY, base_url=f"http://proxyuser:{PASSWORD}@127.0.0.1:9/s"))
        assert (error.status, error.code, error.param) == (0, "invalid_argument", "base_url")
        assert PASSWORD not in str(error) and "http://***@127.0.0.1:9/s" in error.message
    error = raised(lambda: Toolgate(api_key=KEY, base_url=f"ftp://u:{PASSWORD}@host"))
    assert error.code == "invalid_argument" and PASSWORD not in error.message


@pytest.mark.parametrize("space", ["\n", "\r\n", " ", "\t"], ids=["newline", "crlf", "space", "tab"])
def test_white_space_around_a_base_url_is_trimmed_as_around_an_api_key(answering, monkeypatch, space):
    # urlsplit dropped it when the client checked the URL, and the client kept the raw string:
    # every request raised httpx.InvalidURL, not a ToolgateError.
    client = Toolgate(api_key=KEY, base_url=f"{space}{answering.url}{space}")
    assert client.base_url == answering.url
    client.keys.list()
    monkeypatch.setenv("TOOLGATE_BASE_URL", answering.url + space)
    Toolgate(api_key=KEY).keys.list()
    assert [r.path for r in answering.received] == ["/api/v1/keys", "/api/v1/keys"]


@pytest.mark.parametrize(
    ("url", "position"),
    [("http://127.0.0.1:9/a b", 21), ("http://127.0.0.1:9/a\tb", 21), ("http://127.0.0.1:9\n/gw", 19), ("http://127.0.0.1:9/\u00a0gw", 20)],
    ids=["space", "tab", "newline", "no_break_space"],
)
def test_white_space_inside_a_base_url_is_refused_when_the_client_is_made_naming_where(url, position):
    for make in (Toolgate, AsyncToolgate):
        error = raised(lambda: make(api_key=KEY, base_url=url))
        assert (error.status, error.code, error.param) == (0, "invalid_argument", "base_url")
        assert error.message == f"base_url must not hold white space or control characters (got {url!r}, one at position {position}); write a space in a path as %20."


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999", "http://127.0.0.1:port", "http://[::1", "http://:8402", "http:127.0.0.1:8402"])
def test_a_base_url_httpx_cannot_use_is_refused_when_the_client_is_made_as_not_an_http_url(url):
    # The TypeScript library's URL refuses these too (a port above 65535, an unclosed IPv6
    # address, no host): httpx.InvalidURL or a bare ValueError on every request, before.
    error = raised(lambda: Toolgate(api_key=KEY, base_url=url))
    assert (error.status, error.code, error.param) == (0, "invalid_argument", "base_url")
    assert error.message == f"base_url must be an http(s) URL such as https://toolgate.example (got {url!r})."


@pytest.mark.parametrize("path", ["/gw?x=1", "/gw#f", "/gw?", "/#"], ids=["query", "fragment", "empty_query", "empty_fragment"])
def test_a_base_url_with_a_query_or_fragment_is_refused_before_any_request(answering, monkeypatch, path):
    # The request's path was added after it (/gw?x=1/api/v1/keys), the API key with it: outside
    # the gateway at /gw. The TypeScript library and the CLI refuse it alike.
    url = answering.url + path
    message = f"must not hold a query (?…) or fragment (#…) (got {url!r}): give the gateway's address alone, such as https://toolgate.example/gw."
    for make in (Toolgate, AsyncToolgate):
        error = raised(lambda: make(api_key=KEY, base_url=url).keys.list())
        assert (error.status, error.code, error.param, error.message) == (0, "invalid_argument", "base_url", f"base_url {message}")
    monkeypatch.setenv("TOOLGATE_BASE_URL", url)
    error = raised(lambda: Toolgate(api_key=KEY).keys.list())
    assert (error.param, error.message) == ("TOOLGATE_BASE_URL", f"TOOLGATE_BASE_URL {message}")
    assert answering.received == []


def test_a_redirects_location_with_credentials_is_named_without_them():
    server = ScriptedServer(lambda request, n: (302, {"location": f"http://u:{PASSWORD}@elsewhere.example/x"}, ""))
    try:
        error = raised(lambda: Toolgate(api_key=KEY, base_url=server.url).account.get())
    finally:
        server.close()
    assert error.code == "invalid_response" and PASSWORD not in error.message


@pytest.mark.parametrize("name", ["User-Agent", "user-agent", "USER-AGENT"])
def test_the_headers_option_replaces_the_default_user_agent_whatever_its_case(answering, name):
    Toolgate(api_key=KEY, base_url=answering.url, headers={name: "my-agent/1.0", "Accept": "application/json"}).keys.list()
    sent = answering.received[0]
    assert sent.headers["user-agent"] == ["my-agent/1.0"]
    assert sent.headers["accept"] == ["application/json"]


@pytest.mark.parametrize("headers", [{"X-Trace": "a\nb"}, {"X-Trace": "café"}, {"X Trace": "a"}], ids=["line_break", "non_ascii", "bad_name"])
def test_a_header_http_cannot_carry_is_refused_when_the_client_is_made(headers):
    error = raised(lambda: Toolgate(api_key=KEY, base_url="http://127.0.0.1:9", headers=headers))
    assert (error.status, error.code, error.param) == (0, "invalid_argument", "headers")


@pytest.mark.parametrize("timeout", [math.inf, math.nan, 0, -1, 3_000_000.0], ids=["inf", "nan", "zero", "negative", "huge"])
def test_a_timeout_no_timer_can_keep_is_refused_when_the_client_is_made(timeout):
    for make in (Toolgate, AsyncToolgate):
        error = raised(lambda: make(api_key=KEY, base_url="http://127.0.0.1:9", timeout=timeout))
        assert (error.status, error.code, error.param) == (0, "invalid_argument", "timeout")


@pytest.mark.parametrize("timeout", [math.inf, 3_000_000.0], ids=["inf", "huge"])
def test_a_calls_own_timeout_no_timer_can_keep_is_refused_before_any_request(answering, timeout):
    client = Toolgate(api_key=KEY, base_url=answering.url)
    error = raised(lambda: client.tools.call("hash", {"text": "x"}, timeout=timeout))
    assert (error.status, error.code, error.param) == (0, "invalid_argument", "timeout")
    assert answering.received == []


def test_the_largest_timeout_a_timer_keeps_is_taken(answering):
    assert Toolgate(api_key=KEY, base_url=answering.url, timeout=2_147_483.647).keys.list() == []
