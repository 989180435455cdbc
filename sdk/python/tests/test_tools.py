"""Listing and calling tools with an API key, with the synchronous and the asynchronous client."""

from __future__ import annotations

import hashlib

import pytest

from toolgate import AsyncToolgate, Tool, Toolgate


def test_lists_the_catalogue_with_prices_and_schemas(gateway):
    with Toolgate(base_url=gateway.base_url, api_key="unused") as client:
        tools = client.tools.list()
    names = {t.name for t in tools}
    assert {"hash", "unit-convert", "web-search"} <= names
    hash_tool = next(t for t in tools if t.name == "hash")
    assert isinstance(hash_tool, Tool)
    assert hash_tool.price.credits == 1 and hash_tool.price.usdc_atomic == 2000
    assert hash_tool.input_schema["required"] == ["text"]
    assert next(t for t in tools if t.name == "web-search").available is False


def test_gets_one_tool_by_name_or_alias(gateway):
    client = Toolgate(base_url=gateway.base_url)
    assert client.tools.get("search-web").name == "web-search"


def test_calls_a_tool_with_a_key_and_is_charged_its_price(gateway, pro_key):
    client = Toolgate(api_key=pro_key, base_url=gateway.base_url)
    before = gateway.balance(pro_key)
    output = client.tools.call("hash", {"text": "hello", "algorithm": "sha256"})
    assert output == {"algorithm": "sha256", "encoding": "hex", "digest": hashlib.sha256(b"hello").hexdigest()}
    assert gateway.balance(pro_key) == before - 1
    details = client.tools.call_with_details("unit-convert", {"value": 1, "from": "km", "to": "m"})
    assert details.credits_charged == 1 and details.credits_remaining == before - 2
    assert details.request_id and details.request_id.startswith("req_")
    assert details.replayed is False


def test_reads_key_and_base_url_from_the_environment(gateway, pro_key, monkeypatch):
    monkeypatch.setenv("TOOLGATE_API_KEY", pro_key)
    monkeypatch.setenv("TOOLGATE_BASE_URL", gateway.base_url)
    assert Toolgate().account.get().credits == gateway.balance(pro_key)


async def test_async_client_lists_and_calls(gateway, pro_key):
    async with AsyncToolgate(api_key=pro_key, base_url=gateway.base_url) as client:
        tools = await client.tools.list()
        assert "hash" in {t.name for t in tools}
        assert (await client.tools.get("hash")).title == "Hash"
        output = await client.tools.call("hash", {"text": "hello", "algorithm": "md5"})
    assert output["digest"] == hashlib.md5(b"hello").hexdigest()
