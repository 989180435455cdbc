"""Error answers become one ToolgateError with the gateway's status, code, message, param and request id."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import httpx
import pytest

from toolgate import AsyncToolgate, Toolgate, ToolgateError


def test_invalid_input_is_a_422_naming_the_field(gateway, pro_key):
    client = Toolgate(api_key=pro_key, base_url=gateway.base_url)
    before = gateway.balance(pro_key)
    with pytest.raises(ToolgateError) as caught:
        client.tools.call("hash", {"text": 42})
    error = caught.value
    assert (error.status, error.code, error.param) == (422, "validation_failed", "text")
    assert "text" in error.message and error.request_id.startswith("req_")
    assert gateway.balance(pro_key) == before  # never charged


def test_a_non_ascii_idempotency_key_is_refused_by_the_client_as_the_gateway_would(gateway, pro_key):
    # The gateway's rule (1 to 255 printable ASCII characters), checked before sending, as the
    # TypeScript library and the CLI do: an empty key is refused too, never dropped.
    client = Toolgate(api_key=pro_key, base_url=gateway.base_url)
    before = gateway.balance(pro_key)
    with pytest.raises(ToolgateError) as caught:
        client.tools.call("hash", {"text": "x"}, idempotency_key="clé")
    assert (caught.value.status, caught.value.code, caught.value.param) == (0, "invalid_argument", "idempotency_key")
    assert gateway.balance(pro_key) == before


async def test_async_client_raises_the_same_error(gateway, pro_key):
    async with AsyncToolgate(api_key=pro_key, base_url=gateway.base_url) as client:
        with pytest.raises(ToolgateError) as caught:
            await client.tools.call("hash", {"text": "x", "algorithm": "crc32"})
    assert (caught.value.status, caught.value.code, caught.value.param) == (422, "validation_failed", "algorithm")


def test_a_call_without_key_or_wallet_is_a_402_with_the_offer(gateway):
    client = Toolgate(base_url=gateway.base_url, api_key="")
    with pytest.raises(ToolgateError) as caught:
        client.tools.call("hash", {"text": "x"})
    error = caught.value
    assert (error.status, error.code) == (402, "payment_required")
    assert error.request_id.startswith("req_")
    assert error.body["accepts"][0]["maxAmountRequired"] == "2000"


def test_a_keyed_account_out_of_credits_gets_402_insufficient_credits(gateway):
    _, key = gateway.new_account("pro", 25)  # the sign-up grant only
    client = Toolgate(api_key=key, base_url=gateway.base_url, max_retries=0)
    for i in range(25):
        client.tools.call("hash", {"text": str(i)})
    with pytest.raises(ToolgateError) as caught:
        client.tools.call("hash", {"text": "one too many"})
    assert (caught.value.status, caught.value.code) == (402, "insufficient_credits")


def test_rate_limited_is_a_429_with_retry_after(gateway):
    _, key = gateway.new_account("free", 25)
    client = Toolgate(api_key=key, base_url=gateway.base_url, max_retries=0)
    with pytest.raises(ToolgateError) as caught:
        for _ in range(61):  # the Free tier's 60 requests a minute, and one more
            client.account.get()
    error = caught.value
    assert (error.status, error.code) == (429, "rate_limited")
    assert error.retry_after is not None and 0 < error.retry_after <= 60
    assert error.request_id.startswith("req_")


def test_an_unknown_key_is_a_401(gateway):
    with pytest.raises(ToolgateError) as caught:
        Toolgate(api_key="tg_live_nope", base_url=gateway.base_url).account.get()
    assert (caught.value.status, caught.value.code) == (401, "invalid_api_key")


def test_an_answer_that_is_not_json_is_invalid_response_with_status_0(gateway, pro_key):
    # Asking for CSV makes the gateway answer the usage page 200 as text/csv.
    client = Toolgate(api_key=pro_key, base_url=gateway.base_url, headers={"accept": "text/csv"})
    with pytest.raises(ToolgateError) as caught:
        client.usage.list()
    error = caught.value
    assert (error.status, error.code) == (0, "invalid_response")
    assert error.message == "The gateway answered 200 with a body that is not JSON."
    assert error.request_id and error.request_id.startswith("req_")


def test_an_empty_dot_or_dot_dot_id_is_refused_before_any_request(gateway, pro_key):
    sent: list[str] = []
    http = httpx.Client(event_hooks={"request": [lambda request: sent.append(str(request.url))]})
    client = Toolgate(api_key=pro_key, base_url=gateway.base_url, http_client=http)
    for attempt in (
        lambda: client.keys.rotate(".."),
        lambda: client.keys.revoke("."),
        lambda: client.keys.update("", name="x"),
        lambda: client.tools.get(".."),
        lambda: client.tools.call("..", {}),
        lambda: client.webhooks.resend("wh_1", ".."),
    ):
        with pytest.raises(ToolgateError) as caught:
            attempt()
        assert (caught.value.status, caught.value.code) == (0, "invalid_argument")
    assert sent == []  # they would name another path: keys.rotate("..") posted to /api/v1/rotate
    with pytest.raises(ToolgateError) as caught:
        client.keys.revoke("../x")  # anything else is one encoded segment
    assert (caught.value.status, caught.value.code) == (404, "not_found")
    assert sent == [f"{gateway.base_url}/api/v1/keys/..%2Fx"]


def test_an_unreachable_gateway_is_a_network_error_after_retries(gateway):
    client = Toolgate(api_key="k", base_url="http://127.0.0.1:9", max_retries=1)
    with pytest.raises(ToolgateError) as caught:
        client.tools.list()
    assert (caught.value.status, caught.value.code) == (0, "network_error")


def test_a_base_url_without_http_is_refused_when_the_client_is_made_naming_it(monkeypatch):
    # The usual slip, a host without its scheme, was retried as a network error on every request.
    with pytest.raises(ToolgateError) as made:
        Toolgate(api_key="k", base_url="localhost:8402")
    assert (made.value.status, made.value.code, made.value.message) == (
        0,
        "invalid_argument",
        "base_url must be an http(s) URL such as https://toolgate.example (got 'localhost:8402').",
    )
    monkeypatch.setenv("TOOLGATE_BASE_URL", "api.toolgate.example")
    with pytest.raises(ToolgateError) as from_env:
        AsyncToolgate(api_key="k")
    assert (from_env.value.code, from_env.value.message) == (
        "invalid_argument",
        "TOOLGATE_BASE_URL must be an http(s) URL such as https://toolgate.example (got 'api.toolgate.example').",
    )


def test_a_redirect_is_not_followed_so_the_key_never_reaches_the_address_it_names():
    seen: list[str | None] = []

    class Elsewhere(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(self.headers.get("x-api-key"))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    other = HTTPServer(("127.0.0.1", 0), Elsewhere)
    target = f"http://127.0.0.1:{other.server_port}/v1/tools/hash"

    class Redirecting(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.send_response(307)
            self.send_header("location", target)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    proxy = HTTPServer(("127.0.0.1", 0), Redirecting)
    for server in (other, proxy):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        # Even an httpx client of the caller's that follows redirects does not follow this one.
        client = Toolgate(
            api_key="tg_live_secret",
            base_url=f"http://127.0.0.1:{proxy.server_port}",
            http_client=httpx.Client(follow_redirects=True),
        )
        with pytest.raises(ToolgateError) as caught:
            client.tools.call("hash", {"text": "a"})
        assert (caught.value.status, caught.value.code) == (0, "invalid_response")
        assert f"answered 307 to {target}" in caught.value.message
        assert seen == []
        assert "tg_live_secret" not in repr(client._transport.settings)
    finally:
        proxy.shutdown()
        other.shutdown()
