"""What the library reads from an answer, read as the TypeScript library reads it
(test/sdk/typescript/answers-read-strictly.test.ts): a charged call's receipt that cannot be
decoded never costs its output; ``Retry-After`` is delta-seconds (digits only) or an HTTP-date,
anything else as if absent; a paged walk handed back a cursor it has used stops with
``invalid_response``; a 2xx answer of the wrong shape is ``invalid_response``, not a bare KeyError.
Real local servers on loopback."""

from __future__ import annotations

import base64
import email.utils
import time
from typing import Any, AsyncIterator, Callable, Iterator

import httpx
import pytest

from scripted import CALLED, ScriptedServer
from toolgate import AsyncToolgate, Toolgate, ToolgateError
from toolgate._errors import retry_after_seconds

KEY = "tg_test_key"


def serving(script: Callable[..., Any]) -> ScriptedServer:
    return ScriptedServer(script)


@pytest.mark.parametrize(
    "header", ["%%not-base64%%", base64.b64encode(b"not json").decode(), base64.b64encode(b"[1,2]").decode()], ids=["not_base64", "not_json", "not_object"]
)
def test_a_receipt_that_cannot_be_decoded_leaves_the_output_with_no_receipt(header):
    status, headers, body = CALLED
    server = serving(lambda r, n: (status, {**headers, "payment-response": header}, body))
    try:
        result = Toolgate(api_key=KEY, base_url=server.url).tools.call_with_details("hash", {"text": "x"})
    finally:
        server.close()
    assert result.output == {"digest": "abc"} and result.payment is None and result.credits_charged == 1


@pytest.mark.parametrize("value", ["0", "5", "120", " 7 "])
def test_retry_after_in_digits_is_delta_seconds(value):
    assert retry_after_seconds(value) == float(value.strip())


@pytest.mark.parametrize(
    "value",
    ["-5", "+5", "1e3", "1.5", "nan", "NaN", "inf", "Infinity", "abc 2030", "soon 3", "1_000", "0x10", "", "٣", "Sun, 31 Feb 2099 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT"],
)
def test_any_other_retry_after_is_as_if_absent(value):
    assert retry_after_seconds(value) is None


def test_an_http_date_in_each_of_the_three_forms_is_the_seconds_until_then():
    ahead = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 28 < retry_after_seconds(ahead) <= 30
    for past in ("Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"):
        assert retry_after_seconds(past) == 0.0


@pytest.mark.parametrize("value", ["abc 2030", "1e3", "-5", "inf", "nan"])
def test_a_429_with_an_invalid_retry_after_is_retried_after_the_backoff(value):
    server = serving(lambda r, n: (429, {"retry-after": value}, {"error": {"code": "rate_limited"}}) if n == 0 else (200, {}, {"data": []}))
    try:
        started = time.monotonic()
        Toolgate(api_key=KEY, base_url=server.url).keys.list()
        waited = time.monotonic() - started
    finally:
        server.close()
    assert len(server.received) == 2
    assert waited >= 0.2  # the first backoff: 0.25-0.5 s, neither at once nor refused


def test_a_retry_after_over_60_s_is_still_returned_as_the_error():
    server = serving(lambda r, n: (429, {"retry-after": "1000"}, {"error": {"code": "rate_limited", "message": "slow down"}}))
    try:
        with pytest.raises(ToolgateError) as caught:
            Toolgate(api_key=KEY, base_url=server.url).keys.list()
    finally:
        server.close()
    assert (caught.value.status, caught.value.retry_after) == (429, 1000.0)
    assert len(server.received) == 1


EVENT = {"id": "evt_1", "event": "x", "timestamp": "t", "data": {}}


def test_a_walk_handed_back_the_cursor_that_fetched_the_page_stops_with_invalid_response():
    server = serving(lambda r, n: (200, {}, {"data": [EVENT], "next_cursor": "same"}))
    seen: list[Any] = []
    try:
        with pytest.raises(ToolgateError) as caught:
            for event in Toolgate(api_key=KEY, base_url=server.url).account.iter_events():
                seen.append(event)
    finally:
        server.close()
    assert (caught.value.status, caught.value.code) == (0, "invalid_response")
    assert len(server.received) == 2 and len(seen) == 2


async def test_the_async_walk_stops_too_and_the_callers_start_cursor_counts():
    cursors = {"start": "b", "b": "c", "c": "start"}
    server = serving(lambda r, n: (200, {}, {"data": [], "next_cursor": cursors.get(r.query("cursor") or "")}))
    try:
        async with AsyncToolgate(api_key=KEY, base_url=server.url) as client:
            with pytest.raises(ToolgateError) as caught:
                async for _ in client.usage.iter_entries(cursor="start"):
                    pass
    finally:
        server.close()
    assert caught.value.code == "invalid_response"
    assert [r.query("cursor") for r in server.received] == ["start", "b", "c"]


def test_a_walk_of_empty_pages_each_naming_a_new_next_page_stops_after_10():
    server = serving(lambda r, n: (200, {}, {"data": [], "next_cursor": f"c{n}"}))
    try:
        with pytest.raises(ToolgateError) as caught:
            for _ in Toolgate(api_key=KEY, base_url=server.url).account.iter_events():
                pass
    finally:
        server.close()
    assert (caught.value.status, caught.value.code) == (0, "invalid_response")
    assert "10 pages in a row with no items" in caught.value.message
    assert len(server.received) == 10


async def test_an_async_walk_of_empty_pages_walks_on_when_a_page_with_items_comes_before_the_tenth():
    server = serving(lambda r, n: (200, {}, {"data": [EVENT] if n == 9 else [], "next_cursor": f"c{n}" if n < 18 else None}))
    try:
        async with AsyncToolgate(api_key=KEY, base_url=server.url) as client:
            seen = [event async for event in client.account.iter_events()]
    finally:
        server.close()
    assert len(seen) == 1 and len(server.received) == 19
    server = serving(lambda r, n: (200, {}, {"data": [], "next_cursor": f"c{n}"}))
    try:
        async with AsyncToolgate(api_key=KEY, base_url=server.url) as client:
            with pytest.raises(ToolgateError) as caught:
                async for _ in client.usage.iter_entries():
                    pass
    finally:
        server.close()
    assert caught.value.code == "invalid_response" and len(server.received) == 10


class _Spaces(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A body of ``mib`` MiB of spaces, the same 1 MiB chunk again and again (cheap to make)."""

    CHUNK = b" " * (1024 * 1024)

    def __init__(self, mib: int) -> None:
        self.mib = mib

    def __iter__(self) -> Iterator[bytes]:
        for _ in range(self.mib):
            yield self.CHUNK

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for _ in range(self.mib):
            yield self.CHUNK


def _answering(calls: list[str], mib: int | None = None, declared: int | None = None) -> Callable[[httpx.Request], httpx.Response]:
    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        if declared is not None:
            return httpx.Response(200, headers={"content-length": str(declared)}, content=b"{}")
        return httpx.Response(200, headers={"content-type": "application/json"}, stream=_Spaces(mib or 0))

    return handler


def test_an_answer_body_over_384_mib_is_invalid_response_and_not_retried():
    for answering in ({"mib": 385}, {"declared": 384 * 1024 * 1024 + 1}):
        calls: list[str] = []
        http = httpx.Client(transport=httpx.MockTransport(_answering(calls, **answering)))
        client = Toolgate(api_key=KEY, base_url="http://127.0.0.1:9", max_retries=2, http_client=http)
        for call in (client.keys.list, lambda client=client: client.tools.call("hash", {"text": "a"})):
            calls.clear()
            with pytest.raises(ToolgateError) as caught:
                call()
            assert (caught.value.status, caught.value.code) == (0, "invalid_response"), answering
            assert "with a body over 384 MiB" in caught.value.message
            assert len(calls) == 1
    # Under the limit the body is read whole (spaces: not JSON, refused for its shape).
    http = httpx.Client(transport=httpx.MockTransport(_answering([], mib=3)))
    with pytest.raises(ToolgateError) as caught:
        Toolgate(api_key=KEY, base_url="http://127.0.0.1:9", http_client=http).keys.list()
    assert caught.value.code == "invalid_response" and "384 MiB" not in caught.value.message


async def test_an_answer_body_over_384_mib_is_invalid_response_for_the_async_client_too():
    calls: list[str] = []
    http = httpx.AsyncClient(transport=httpx.MockTransport(_answering(calls, mib=385)))
    async with AsyncToolgate(api_key=KEY, base_url="http://127.0.0.1:9", max_retries=2, http_client=http) as client:
        with pytest.raises(ToolgateError) as caught:
            await client.keys.list()
    assert caught.value.code == "invalid_response" and "with a body over 384 MiB" in caught.value.message
    assert len(calls) == 1


WRONG_SHAPES = [
    ("account.get", lambda c: c.account.get(), {"id": "acct_1", "tier": "free"}),
    ("keys.create", lambda c: c.keys.create(), {"id": "key_1"}),
    ("keys.list", lambda c: c.keys.list(), {"data": "nope"}),
    ("tools.list", lambda c: c.tools.list(), [1, 2]),
    ("usage.list", lambda c: c.usage.list(), {"data": [{"id": "x"}]}),
    ("webhooks.test", lambda c: c.webhooks.test(), {"ok": True}),
]


@pytest.mark.parametrize("call,body", [(c, b) for _, c, b in WRONG_SHAPES], ids=[n for n, _, _ in WRONG_SHAPES])
def test_a_2xx_answer_of_the_wrong_shape_is_invalid_response(call, body):
    server = serving(lambda r, n: (200, {}, body))
    try:
        with pytest.raises(ToolgateError) as caught:
            call(Toolgate(api_key=KEY, base_url=server.url))
    finally:
        server.close()
    assert (caught.value.status, caught.value.code) == (0, "invalid_response")
