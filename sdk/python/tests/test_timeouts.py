"""``timeout`` bounds each attempt as a whole, as the TypeScript library's ``timeoutMs``: a real
local HTTP server that answers a byte at a time, each byte well within any read timeout and the
whole answer over the limit, makes the call fail with ``timeout`` after about the timeout."""

from __future__ import annotations

import json
import socket
import time
from typing import Any, Awaitable, Callable, Iterator

import pytest

from conftest import LoopbackServer
from toolgate import AsyncToolgate, Toolgate, ToolgateError

BYTE_EVERY = 0.05  # seconds between bytes
BODY = json.dumps({"id": "acct_slow", "tier": "free", "credits": 1, "padding": "x" * 40}).encode()
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n" % len(BODY)


class TricklingServer(LoopbackServer):
    """Answers every request 200 with a JSON body, one byte every 50 ms (over 5 s in all). Under
    ``/head/`` the status line and headers trickle too; elsewhere they come at once and the body
    trickles."""

    def _serve(self, client: socket.socket) -> None:
        with client:
            request = b""
            while b"\r\n\r\n" not in request:
                chunk = client.recv(65536)
                if not chunk:
                    return
                request += chunk
            trickled = HEAD + BODY if request.startswith(b"GET /head/") else BODY
            try:
                if trickled is BODY:
                    client.sendall(HEAD)
                for i in range(len(trickled)):
                    client.sendall(trickled[i : i + 1])
                    time.sleep(BYTE_EVERY)
            except OSError:
                return  # the client gave up


@pytest.fixture
def trickling() -> Iterator[TricklingServer]:
    server = TricklingServer()
    yield server
    server.close()


def timed(run: Callable[[], Any]) -> tuple[str, float]:
    started = time.monotonic()
    try:
        run()
        outcome = "answered"
    except ToolgateError as error:
        outcome = error.code
    return outcome, time.monotonic() - started


async def atimed(run: Callable[[], Awaitable[Any]]) -> tuple[str, float]:
    started = time.monotonic()
    try:
        await run()
        outcome = "answered"
    except ToolgateError as error:
        outcome = error.code
    return outcome, time.monotonic() - started


def about_the_timeout(result: tuple[str, float], timeout: float) -> None:
    outcome, seconds = result
    assert outcome == "timeout", result
    # The whole answer would take over 5 s; httpx's per-phase timeout alone never fires here.
    assert timeout - 0.05 <= seconds < timeout + 1.5, result


def test_the_client_timeout_bounds_an_answer_that_trickles_in(trickling):
    for path in ("/body", "/head"):
        client = Toolgate(api_key="k", base_url=trickling.url + path, timeout=0.6, max_retries=0)
        about_the_timeout(timed(client.account.get), 0.6)


def test_a_calls_own_timeout_bounds_the_whole_attempt_too(trickling):
    client = Toolgate(api_key="k", base_url=trickling.url + "/body", timeout=60, max_retries=0)
    about_the_timeout(timed(lambda: client.tools.call("hash", {"text": "x"}, timeout=0.6)), 0.6)


def test_a_read_that_timed_out_is_retried_each_attempt_within_its_timeout(trickling):
    client = Toolgate(api_key="k", base_url=trickling.url + "/head", timeout=0.5, max_retries=1)
    outcome, seconds = timed(client.account.get)
    # Two attempts of 0.5 s and a backoff of 0.25 to 0.5 s between them.
    assert outcome == "timeout" and 1.2 <= seconds < 3, (outcome, seconds)


async def test_the_async_client_bounds_each_attempt_the_same_way(trickling):
    async with AsyncToolgate(api_key="k", base_url=trickling.url + "/body", timeout=0.6, max_retries=0) as client:
        about_the_timeout(await atimed(client.account.get), 0.6)
    async with AsyncToolgate(api_key="k", base_url=trickling.url + "/head", timeout=60, max_retries=0) as client:
        about_the_timeout(await atimed(lambda: client.tools.call("hash", {"text": "x"}, timeout=0.6)), 0.6)
