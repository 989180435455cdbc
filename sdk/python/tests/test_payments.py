"""Paying calls with x402 from a wallet on the local anvil chain, within the caller's spending caps."""

from __future__ import annotations

import pytest

from toolgate import AsyncToolgate, SpendingLimits, Toolgate, ToolgateError


def test_a_wallet_pays_a_call_and_the_token_moves_by_exactly_the_price(gateway, wallet, spending):
    price = Toolgate(base_url=gateway.base_url).tools.get("hash").price.usdc_atomic
    payer_before = gateway.token_balance(gateway.wallet_address)
    payee_before = gateway.token_balance(gateway.pay_to)
    client = Toolgate(base_url=gateway.base_url, wallet=wallet, spending=spending)
    result = client.tools.call_with_details("hash", {"text": "paid with x402"})
    assert result.output["algorithm"] == "sha256"
    assert result.payment is not None and result.payment["transaction"].startswith("0x")
    assert result.payment["payer"].lower() == gateway.wallet_address.lower()
    assert gateway.token_balance(gateway.wallet_address) == payer_before - price
    assert gateway.token_balance(gateway.pay_to) == payee_before + price
    assert client.spent == price
    # Server-Timing: the payment's own time (verified and settled on chain) apart from the tool's and the gateway's.
    assert result.payment_ms is not None and result.payment_ms > 0
    assert result.tool_ms is not None and result.gateway_ms is not None


async def test_the_async_client_pays_too(gateway, wallet, spending):
    payer_before = gateway.token_balance(gateway.wallet_address)
    async with AsyncToolgate(base_url=gateway.base_url, wallet=wallet, spending=spending) as client:
        price = (await client.tools.get("unit-convert")).price.usdc_atomic
        output = await client.tools.call("unit-convert", {"value": 1, "from": "km", "to": "m"})
        assert output["result"] == 1000
        assert client.spent == price
    assert gateway.token_balance(gateway.wallet_address) == payer_before - price


def test_a_call_above_the_per_call_cap_is_refused_before_signing(gateway, wallet):
    payer_before = gateway.token_balance(gateway.wallet_address)
    limits = SpendingLimits(max_per_call=1999, allowed_assets=[{"network": gateway.network, "asset": gateway.token_address}])
    client = Toolgate(base_url=gateway.base_url, wallet=wallet, spending=limits)
    with pytest.raises(ToolgateError) as caught:
        client.tools.call("hash", {"text": "too dear"})
    assert (caught.value.status, caught.value.code) == (0, "spend_cap_exceeded")
    assert "per-call cap" in caught.value.message
    assert client.spent == 0
    assert gateway.token_balance(gateway.wallet_address) == payer_before


def test_the_session_cap_stops_payments_once_reached(gateway, wallet):
    limits = SpendingLimits(max_per_session=3000, allowed_assets=[{"network": gateway.network, "asset": gateway.token_address}])
    client = Toolgate(base_url=gateway.base_url, wallet=wallet, spending=limits)
    client.tools.call("hash", {"text": "first"})
    before = gateway.token_balance(gateway.wallet_address)
    with pytest.raises(ToolgateError) as caught:
        client.tools.call("hash", {"text": "second"})
    assert caught.value.code == "spend_cap_exceeded" and "session" in caught.value.message
    assert client.spent == 2000
    assert gateway.token_balance(gateway.wallet_address) == before


def test_an_unlisted_token_is_not_paid(gateway, wallet):
    # Without allowed_assets the x402 client pays only the canonical USDC it knows.
    client = Toolgate(base_url=gateway.base_url, wallet=wallet)
    with pytest.raises(ToolgateError) as caught:
        client.tools.call("hash", {"text": "unknown token"})
    assert (caught.value.status, caught.value.code) == (0, "payment_failed")
    # Said in this library's terms, naming the token offered (the x402 client's words name its own options).
    assert "SpendingLimits(allowed_assets=" in caught.value.message
    assert gateway.token_address.lower() in caught.value.message.lower()
    assert "spend_controls" not in caught.value.message
