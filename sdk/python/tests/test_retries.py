"""A call whose answer is lost on the way back is retried with the same Idempotency-Key, and the
gateway runs and charges it once."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

from toolgate import AsyncToolgate, Toolgate, ToolgateError


def debits(client):
    return [e for e in client.usage.list(limit=100).data if e.kind == "debit"]


def test_a_retried_call_after_a_dropped_connection_is_charged_once(gateway, pro_key, dropping_proxy):
    before = gateway.balance(pro_key)
    client = Toolgate(api_key=pro_key, base_url=dropping_proxy.url)
    result = client.tools.call_with_details("hash", {"text": "charged once"})
    assert dropping_proxy.dropped == 1 and dropping_proxy.connections == 2  # the answer was lost once
    assert result.replayed is True  # the retry got the first attempt's stored answer
    assert result.tool_ms is None and result.gateway_ms is not None  # Server-Timing: no tool ran
    assert gateway.balance(pro_key) == before - 1
    assert len(debits(Toolgate(api_key=pro_key, base_url=gateway.base_url))) == 1


async def test_the_async_client_retries_the_same_way(gateway, pro_key, dropping_proxy):
    before = gateway.balance(pro_key)
    async with AsyncToolgate(api_key=pro_key, base_url=dropping_proxy.url) as client:
        output = await client.tools.call("hash", {"text": "async, charged once"})
    assert output["algorithm"] == "sha256" and dropping_proxy.dropped == 1
    assert gateway.balance(pro_key) == before - 1


def test_a_call_whose_replica_failed_behind_the_load_balancer_is_retried_and_charged_once(
    gateway, pro_key, dropping_proxy, load_balancer
):
    before = gateway.balance(pro_key)
    first = httpx.post(
        f"{load_balancer.url}/v1/tools/hash", headers={"x-api-key": pro_key}, json={"text": "seen by hand"}
    )
    # What the client sees when its replica fails mid-request: the load balancer's 502, which may have run.
    assert (first.status_code, first.json()["error"]["code"]) == (502, "replica_failed")
    assert gateway.balance(pro_key) == before - 1
    dropping_proxy.to_drop = 2
    result = Toolgate(api_key=pro_key, base_url=load_balancer.url).tools.call_with_details("hash", {"text": "lost once"})
    assert result.output["algorithm"] == "sha256" and result.replayed is True
    assert dropping_proxy.dropped == 2
    assert gateway.balance(pro_key) == before - 2  # one charge for each call, none for the retry


def test_a_paid_call_retried_after_a_dropped_connection_pays_once(gateway, wallet, spending, dropping_proxy):
    price = 2000
    payer_before = gateway.token_balance(gateway.wallet_address)
    client = Toolgate(base_url=dropping_proxy.url, wallet=wallet, spending=spending)
    dropping_proxy.match = b"payment-signature:"  # lose the answer to the paid attempt
    # The retry re-sends the same signed payment, never a new one; the gateway replays the answer.
    result = client.tools.call_with_details("hash", {"text": "paid once"})
    assert result.output["algorithm"] == "sha256" and result.replayed is True
    assert dropping_proxy.dropped == 1
    assert gateway.token_balance(gateway.wallet_address) == payer_before - price
    assert client.spent == price


def test_a_request_that_is_not_idempotent_is_not_repeated_after_a_lost_answer(gateway, pro_key, dropping_proxy):
    direct = Toolgate(api_key=pro_key, base_url=gateway.base_url)
    keys_before = len(direct.keys.list())
    with pytest.raises(ToolgateError) as caught:
        Toolgate(api_key=pro_key, base_url=dropping_proxy.url).keys.create("lost answer")
    assert (caught.value.status, caught.value.code) == (0, "network_error")
    assert dropping_proxy.connections == 1
    assert len(direct.keys.list()) == keys_before + 1  # created once, not twice


def test_a_revoke_whose_answer_is_lost_is_not_repeated_into_a_404(gateway, pro_key, dropping_proxy):
    direct = Toolgate(api_key=pro_key, base_url=gateway.base_url)
    spare = direct.keys.create("revoked, answer lost")
    with pytest.raises(ToolgateError) as caught:
        Toolgate(api_key=pro_key, base_url=dropping_proxy.url).keys.revoke(spare.info.id)
    # The connection error, not a 404 from a second DELETE: the caller can check, and the key is revoked.
    assert (caught.value.status, caught.value.code) == (0, "network_error")
    assert dropping_proxy.connections == 1
    assert next(k for k in direct.keys.list() if k.id == spare.info.id).status == "revoked"


def test_retries_stop_after_max_retries(gateway, pro_key, dropping_proxy):
    dropping_proxy.to_drop = 10
    before = gateway.balance(pro_key)
    with pytest.raises(ToolgateError) as caught:
        Toolgate(api_key=pro_key, base_url=dropping_proxy.url, max_retries=1).tools.call("hash", {"text": "x"})
    assert caught.value.code == "network_error"
    assert dropping_proxy.connections == 2
    assert gateway.balance(pro_key) == before - 1  # both attempts, one charge


def test_an_unavailable_tool_is_not_retried(gateway, pro_key, dropping_proxy):
    dropping_proxy.to_drop = 0
    client = Toolgate(api_key=pro_key, base_url=dropping_proxy.url, max_retries=2)
    with pytest.raises(ToolgateError) as caught:
        client.tools.call("web-search", {"query": "no provider here"})
    assert (caught.value.status, caught.value.code) == (503, "tool_unavailable")
    assert dropping_proxy.requests == 1


def refusing(proxy, refuse_when):
    """An httpx client whose request hook (run before each attempt connects) records the attempt
    and stops the proxy for the attempts ``refuse_when(request, attempts)`` picks, starting it
    again before the next one: those attempts find the port closed."""
    attempts: list[httpx.Request] = []

    def hook(request: httpx.Request) -> None:
        attempts.append(request)
        if proxy.refused:
            proxy.reopen()
        if refuse_when(request, attempts):
            proxy.refuse()

    return httpx.Client(event_hooks={"request": [hook]}), attempts


def test_a_connection_refused_before_anything_was_sent_is_retried_even_for_a_key_creation(gateway, pro_key, dropping_proxy):
    dropping_proxy.to_drop = 0
    direct = Toolgate(api_key=pro_key, base_url=gateway.base_url)
    keys_before = len(direct.keys.list())
    http, attempts = refusing(dropping_proxy, lambda _, attempts: len(attempts) == 1)
    created = Toolgate(api_key=pro_key, base_url=dropping_proxy.url, http_client=http).keys.create("after a refusal")
    assert created.info.name == "after a refusal"
    assert [a.method for a in attempts] == ["POST", "POST"] and dropping_proxy.connections == 1  # the first never connected
    assert len(direct.keys.list()) == keys_before + 1


def test_refused_connections_are_retried_at_most_max_retries_times(gateway, pro_key, dropping_proxy):
    refused_at: list[float] = []

    def refuse_each(*_: object) -> bool:
        refused_at.append(time.monotonic())
        return True

    http, attempts = refusing(dropping_proxy, refuse_each)
    with pytest.raises(ToolgateError) as caught:
        Toolgate(api_key=pro_key, base_url=dropping_proxy.url, http_client=http, max_retries=2).webhooks.test()
    assert (caught.value.status, caught.value.code) == (0, "network_error")
    assert len(attempts) == 3 and dropping_proxy.connections == 0
    # As the TypeScript library: never again at once (a half to all of 0.5 s, then of 1 s).
    waits = [b - a for a, b in zip(refused_at, refused_at[1:])]
    assert waits[0] >= 0.25 and waits[1] >= 0.5, waits


def test_a_paid_call_whose_paid_attempt_is_refused_resends_the_same_payment_and_pays_once(gateway, wallet, spending, dropping_proxy):
    dropping_proxy.to_drop = 0
    price = 2000
    payer_before = gateway.token_balance(gateway.wallet_address)

    def first_paid(request: httpx.Request, attempts: list[httpx.Request]) -> bool:
        return "payment-signature" in request.headers and sum("payment-signature" in a.headers for a in attempts) == 1

    http, attempts = refusing(dropping_proxy, first_paid)
    client = Toolgate(base_url=dropping_proxy.url, wallet=wallet, spending=spending, http_client=http)
    result = client.tools.call_with_details("hash", {"text": "refused, then paid once"})
    offer, refused, paid = attempts  # the 402 offer, the paid attempt refused, the same payment again
    assert "payment-signature" not in offer.headers
    assert paid.headers["payment-signature"] == refused.headers["payment-signature"]
    assert paid.headers["idempotency-key"] == offer.headers["idempotency-key"]
    assert result.output["algorithm"] == "sha256" and client.spent == price
    assert gateway.token_balance(gateway.wallet_address) == payer_before - price


def test_a_call_takes_its_own_timeout_and_max_retries_as_in_typescript(gateway, pro_key, dropping_proxy):
    client = Toolgate(api_key=pro_key, base_url=dropping_proxy.url, max_retries=2, timeout=60)
    with pytest.raises(ToolgateError) as caught:
        client.tools.call("hash", {"text": "no retry for this one"}, max_retries=0)
    assert caught.value.code == "network_error" and dropping_proxy.connections == 1
    silent = socket.create_server(("127.0.0.1", 0))  # accepts connections (backlog), never answers
    try:
        slow = Toolgate(api_key=pro_key, base_url=f"http://127.0.0.1:{silent.getsockname()[1]}", timeout=60)
        started = time.monotonic()
        with pytest.raises(ToolgateError) as caught:
            slow.tools.call("hash", {"text": "x"}, timeout=0.5, max_retries=0)
        assert caught.value.code == "timeout" and time.monotonic() - started < 5
    finally:
        silent.close()


def test_retry_after_is_read_as_seconds_or_as_a_date():
    from email.utils import formatdate

    from toolgate._errors import retry_after_seconds

    assert retry_after_seconds("7") == 7
    assert 25 <= retry_after_seconds(formatdate(time.time() + 30, usegmt=True)) <= 30
    assert retry_after_seconds("soon") is None

