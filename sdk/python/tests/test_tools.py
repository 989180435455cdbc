"""Listing and calling tools with an API key, with the synchronous and the asynchronous client."""

from __future__ import annotations

import hashlib

import httpx
import pytest

from toolgate import AsyncToolgate, Tool, ToolCategory, Toolgate, ToolgateError
from toolgate.adapters import select_tools


def test_lists_the_catalogue_with_prices_and_schemas(gateway):
    with Toolgate(base_url=gateway.base_url) as client:  # the catalogue is public: no key needed
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
    # Server-Timing: the tool's worker and the gateway's own time, each in milliseconds.
    assert details.tool_ms is not None and details.tool_ms > 0
    assert details.gateway_ms is not None and details.gateway_ms > 0


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


def test_the_catalogue_read_with_a_key_holds_the_accounts_own_tools(gateway, receiver):
    # A Business account's custom tool: its keys see it in the catalogue (and can call it), as
    # with the TypeScript library, so it can be looked up and handed to an agent by name.
    _, key = gateway.new_account("business", 100)
    registered = httpx.post(
        f"{gateway.base_url}/api/v1/custom-tools",
        headers={"x-api-key": key},
        json={"name": "py-word-count", "description": "Counts words.", "url": receiver.url("/tools/word-count"), "input_schema": {"type": "object"}, "price_credits": 1},
        timeout=30,
    )
    assert registered.status_code == 201, registered.text
    client = Toolgate(api_key=key, base_url=gateway.base_url)
    assert "py-word-count" in {t.name for t in client.tools.list()}
    assert client.tools.get("py-word-count").name == "py-word-count"
    assert [t.name for t in select_tools(client.tools.list(), names=["py-word-count"])] == ["py-word-count"]
    # Without the key it stays private.
    assert "py-word-count" not in {t.name for t in Toolgate(base_url=gateway.base_url).tools.list()}


def test_searches_the_catalogue_and_lists_its_categories(gateway):
    asked: list[str] = []
    client = Toolgate(base_url=gateway.base_url, http_client=httpx.Client(event_hooks={"request": [lambda r: asked.append(r.url.raw_path.decode())]}))
    categories = client.tools.categories()
    security = client.tools.list(category="security")
    assert client.tools.list(q="hash")[0].name == "hash"  # ranked: the best match first
    assert {t.category for t in security} == {"security"} and "hash" in {t.name for t in security}
    assert "hash" not in {t.name for t in client.tools.list(q="hash", category="data")}
    [listed] = [c for c in categories if c.name == "security"]
    assert isinstance(listed, ToolCategory) and listed.description and listed.tools == len(security)
    assert sum(c.tools for c in categories) == len(client.tools.list())
    with pytest.raises(ToolgateError) as caught:
        client.tools.list(category="weather")
    assert (caught.value.status, caught.value.code, caught.value.param) == (422, "validation_failed", "category")
    assert asked == [
        "/v1/tools/categories",
        "/v1/tools?category=security",
        "/v1/tools?q=hash",
        "/v1/tools?q=hash&category=data",
        "/v1/tools",
        "/v1/tools?category=weather",
    ]


async def test_the_async_client_searches_too(gateway):
    async with AsyncToolgate(base_url=gateway.base_url) as client:
        assert (await client.tools.list(q="qr code"))[0].name == "qr-code"
        assert "images" in {c.name for c in await client.tools.categories()}


def test_a_tool_keeps_its_tags(gateway):
    """The gateway's search keywords, as TypeScript's Tool has them."""
    assert "sha256" in Toolgate(base_url=gateway.base_url).tools.get("hash").tags
    assert Tool.from_dict({"name": "t", "tags": ["a", "b"]}).tags == ["a", "b"]
    assert Tool.from_dict({"name": "t"}).tags == []


def test_a_tool_says_whether_it_is_the_accounts_own(gateway):
    """``private``, as TypeScript's Tool has it: the catalogue's tools are not."""
    assert Toolgate(base_url=gateway.base_url).tools.get("hash").private is False
    assert Tool.from_dict({"name": "mine", "private": True}).private is True
