"""A network error says whether the request may have run, in the TypeScript library's words: once
the request may have been sent (the connection reset or closed after it, no answer in time), the
message says it may have been received and run, and to check before retrying; a connection refused
before anything was sent says nothing of the kind. Real local servers on loopback, no gateway."""

from __future__ import annotations

import re
import socket
import struct
from typing import Any, Awaitable, Callable, Iterator

import pytest

from conftest import LoopbackServer
from toolgate import AsyncToolgate, Toolgate, ToolgateError

MAY_HAVE_RUN = "the request may have been received and run; check (e.g. list what exists) before retrying."


class DroppingServer(LoopbackServer):
    """Reads each request whole (headers and body), then, as ``how`` says: ``reset`` (RST),
    ``close`` (FIN, no answer), or ``silent`` (keeps the connection open, never answers)."""

    def __init__(self, how: str) -> None:
        self.how = how
        self.requests: list[bytes] = []
        self.held: list[socket.socket] = []
        super().__init__()

    def _serve(self, client: socket.socket) -> None:
        request = b""
        while b"\r\n\r\n" not in request:
            chunk = client.recv(65536)
            if not chunk:
                client.close()
                return
            request += chunk
        head, _, body = request.partition(b"\r\n\r\n")
        length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
        while length and len(body) < int(length.group(1)):
            chunk = client.recv(65536)
            if not chunk:
                break
            body += chunk
        self.requests.append(head + b"\r\n\r\n" + body)  # received whole: it could have run
        if self.how == "silent":
            self.held.append(client)
            return
        if self.how == "reset":
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()

    def close(self) -> None:
        super().close()
        for client in self.held:
            client.close()


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[DroppingServer]:
    dropping = DroppingServer(request.param)
    yield dropping
    dropping.close()


@pytest.fixture
def closed_port() -> str:
    """An address where nothing listens: a connection to it is refused before anything is sent."""
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"http://127.0.0.1:{port}"


def raised(run: Callable[[], Any]) -> ToolgateError:
    with pytest.raises(ToolgateError) as caught:
        run()
    return caught.value


async def araised(run: Callable[[], Awaitable[Any]]) -> ToolgateError:
    with pytest.raises(ToolgateError) as caught:
        await run()
    return caught.value


def no_answer_in_time() -> str:
    """The message of an attempt that had no whole answer in time (the client's own bound on the
    attempt, or httpx's read timeout, whichever fires first)."""
    return rf"^ReadTimeout: .+: {re.escape(MAY_HAVE_RUN)}$"


def lost_connection(url: str) -> str:
    """The message of a connection reset or closed after the request was sent to ``url``."""
    return rf"^Lost the connection to {re.escape(url)} \((ReadError|RemoteProtocolError)(: .+)?\): {re.escape(MAY_HAVE_RUN)}$"


@pytest.mark.parametrize("server", ["reset", "close"], indirect=True)
def test_a_connection_lost_after_sending_says_the_request_may_have_run(server):
    client = Toolgate(api_key="k", base_url=server.url + "/base", max_retries=0)
    error = raised(lambda: client.keys.create("sent, answer lost"))
    assert (error.status, error.code) == (0, "network_error")
    assert re.match(lost_connection(server.url), error.message), error.message
    assert len(server.requests) == 1 and server.requests[0].startswith(b"POST /base/api/v1/keys ")
    assert server.requests[0].endswith(b'"sent, answer lost"}')  # the body was received whole


@pytest.mark.parametrize("server", ["reset", "close"], indirect=True)
def test_a_read_retried_until_its_retries_ran_out_says_so_too(server):
    client = Toolgate(api_key="k", base_url=server.url, max_retries=1)
    error = raised(client.account.get)
    assert error.code == "network_error" and len(server.requests) == 2
    assert re.match(lost_connection(server.url), error.message), error.message


@pytest.mark.parametrize("server", ["silent"], indirect=True)
def test_no_answer_in_time_says_the_request_may_have_run(server):
    client = Toolgate(api_key="k", base_url=server.url, timeout=0.5, max_retries=0)
    error = raised(lambda: client.webhooks.test())
    assert (error.status, error.code) == (0, "timeout") and len(server.requests) == 1
    assert re.match(no_answer_in_time(), error.message), error.message


@pytest.mark.parametrize("server", ["reset", "silent"], indirect=True)
async def test_the_async_client_says_the_same(server):
    async with AsyncToolgate(api_key="k", base_url=server.url, timeout=0.5, max_retries=0) as client:
        error = await araised(lambda: client.keys.create("async, answer lost"))
    assert len(server.requests) == 1
    if server.how == "silent":
        assert error.code == "timeout"
        assert re.match(no_answer_in_time(), error.message), error.message
    else:
        assert error.code == "network_error"
        assert re.match(lost_connection(server.url), error.message), error.message


def test_a_connection_refused_before_sending_does_not_say_the_request_may_have_run(closed_port):
    client = Toolgate(api_key="k", base_url=closed_port, max_retries=0)
    error = raised(lambda: client.keys.create("never sent"))
    assert (error.status, error.code) == (0, "network_error")
    assert error.message.startswith("ConnectError: ") and "may have been received" not in error.message


async def test_the_async_client_does_not_either(closed_port):
    async with AsyncToolgate(api_key="k", base_url=closed_port, max_retries=0) as client:
        error = await araised(lambda: client.keys.create("never sent"))
    assert error.code == "network_error"
    assert error.message.startswith("ConnectError: ") and "may have been received" not in error.message
