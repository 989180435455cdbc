"""Agent-framework adapters, checked offline against each framework's own types: the OpenAI and
Anthropic SDKs' request types (as JSON Schema, validated with jsonschema), their response models
parsed from tool-calling answers, and langchain-core's StructuredTool."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import json
import re
import sys
from typing import Any

import jsonschema
import pytest
from pydantic import TypeAdapter

from toolgate import AsyncToolgate, Toolgate, ToolgateError
from toolgate.adapters import select_tools
from toolgate.adapters.anthropic import AnthropicTools
from toolgate.adapters.openai import OpenAITools

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@functools.cache
def shape(type_: object) -> dict:
    """The JSON Schema of an SDK's request type (a TypedDict), from pydantic."""
    return TypeAdapter(type_).json_schema()


def check_parameters(schema: dict) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    assert not {"oneOf", "anyOf", "allOf", "$schema"} & schema.keys()


def test_subset_by_names_and_by_search(gateway):
    catalogue = Toolgate(base_url=gateway.base_url).tools.list()
    assert [t.name for t in select_tools(catalogue, names=["hash", "convert-units"])] == ["hash", "unit-convert"]
    assert select_tools(catalogue, search="convert units of measure", limit=1)[0].name == "unit-convert"
    assert "web-search" not in {t.name for t in select_tools(catalogue)}  # unavailable tools are left out


def test_an_unknown_name_fails_at_set_up_naming_the_likely_tool(gateway):
    catalogue = Toolgate(base_url=gateway.base_url).tools.list()
    with pytest.raises(ToolgateError) as caught:
        select_tools(catalogue, names=["hash", "hsah", "nope-nothing-like-it"])
    assert (caught.value.status, caught.value.code) == (0, "invalid_argument")
    assert caught.value.message == 'No such tool: "hsah" (did you mean "hash"?), "nope-nothing-like-it".'
    with pytest.raises(ToolgateError, match="did you mean"):
        OpenAITools.load(Toolgate(base_url=gateway.base_url), names=["unit-convrt"])
    with pytest.raises(ToolgateError, match="names or search, not both"):
        select_tools(catalogue, names=["hash"], search="hash")


def test_a_named_tool_is_kept_even_when_unavailable(gateway):
    catalogue = Toolgate(base_url=gateway.base_url).tools.list()
    # No AI provider in the test gateway: ai-summarize is listed unavailable, and kept when named.
    assert [t.name for t in select_tools(catalogue, names=["summarize", "hash"])] == ["ai-summarize", "hash"]
    assert "ai-summarize" not in {t.name for t in select_tools(catalogue, search="summarize")}
    assert [t.name for t in select_tools(catalogue, search="summarize", include_unavailable=True)][0] == "ai-summarize"


def test_search_reads_words_as_the_gateway_does_unicode_letters_and_digits_never_part_of_a_word(gateway):
    hash_tool = next(t for t in Toolgate(base_url=gateway.base_url).tools.list() if t.name == "hash")
    tool = dataclasses.replace(
        hash_tool,
        name="uebersetzen",
        aliases=[],
        title="Übersetzer",
        description="Übersetzt Text ins Japanische (翻訳) und zurück.",
    )

    def found(search: str) -> list[str]:
        return [t.name for t in select_tools([tool], search=search)]

    assert found("übersetzt") == found("ÜBERSETZT") == found("翻訳") == ["uebersetzen"]
    assert found("bersetzt") == found("zur") == []


def test_search_ranks_and_keeps_the_best_five_unless_a_limit_is_given(gateway):
    catalogue = Toolgate(base_url=gateway.base_url).tools.list()
    text = select_tools(catalogue, search="text")
    assert len(text) == 5  # far more tools mention text: the best five
    assert len(select_tools(catalogue, search="text", limit=8)) == 8
    # A word in the name outranks one in the description only.
    markdown = [t.name for t in select_tools(catalogue, search="markdown")]
    assert set(markdown[:2]) == {"html-to-markdown", "markdown-to-html"}
    assert [t.name for t in select_tools(catalogue, search="hash", limit=1)] == ["hash"]
    assert select_tools(catalogue, search="xyzzy plugh") == []
    with pytest.raises(ToolgateError, match="limit must be a positive integer"):
        select_tools(catalogue, search="text", limit=0)


def test_openai_tools_validate_as_chat_completion_tools(gateway):
    from openai.types.chat import ChatCompletionFunctionToolParam

    catalogue = Toolgate(base_url=gateway.base_url).tools.list()
    toolset = OpenAITools.load(Toolgate(base_url=gateway.base_url), names=[t.name for t in catalogue])
    # Every tool named, the whole catalogue (tools named explicitly are kept even when unavailable here).
    assert len(toolset.tools) == len(catalogue) == 64
    request_shape = shape(ChatCompletionFunctionToolParam)
    for tool in toolset.tools:
        jsonschema.validate(tool, request_shape)
        assert NAME.match(tool["function"]["name"])
        check_parameters(tool["function"]["parameters"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"type": "function"}, request_shape)  # the shape does refuse a tool without its function


def test_openai_dispatcher_runs_a_models_tool_calls(gateway, pro_key):
    from openai.types.chat import ChatCompletion, ChatCompletionToolMessageParam

    client = Toolgate(api_key=pro_key, base_url=gateway.base_url)
    toolset = OpenAITools.load(client, search="hash digest")
    completion = ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "test",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {"id": "call_1", "type": "function", "function": {"name": "hash", "arguments": json.dumps({"text": "agent"})}},
                            {"id": "call_2", "type": "function", "function": {"name": "hash", "arguments": json.dumps({"text": 1})}},
                            {"id": "call_3", "type": "function", "function": {"name": "qr-code", "arguments": "{}"}},
                        ],
                    },
                }
            ],
        }
    )
    messages = toolset.run(completion.choices[0].message.tool_calls)
    for message in messages:
        jsonschema.validate(message, shape(ChatCompletionToolMessageParam))
    assert [m["tool_call_id"] for m in messages] == ["call_1", "call_2", "call_3"]
    assert json.loads(messages[0]["content"])["digest"] == hashlib.sha256(b"agent").hexdigest()
    assert json.loads(messages[1]["content"])["error"] == {"code": "validation_failed", "message": json.loads(messages[1]["content"])["error"]["message"], "param": "text"}
    assert json.loads(messages[2]["content"])["error"]["code"] == "tool_not_offered"


def test_anthropic_tools_validate_as_messages_api_tools(gateway):
    from anthropic.types import ToolParam

    toolset = AnthropicTools.load(Toolgate(base_url=gateway.base_url), search="text", limit=20)
    assert toolset.tools
    for tool in toolset.tools:
        jsonschema.validate(tool, shape(ToolParam))
        assert NAME.match(tool["name"])
        check_parameters(tool["input_schema"])
    ai = AnthropicTools(None, [Toolgate(base_url=gateway.base_url).tools.get("ai-generate")]).tools[0]
    check_parameters(ai["input_schema"])  # its top-level oneOf is left to the gateway


async def test_anthropic_dispatcher_runs_tool_use_blocks_with_the_async_client(gateway, pro_key):
    from anthropic.types import Message, ToolResultBlockParam

    async with AsyncToolgate(api_key=pro_key, base_url=gateway.base_url) as client:
        toolset = await AnthropicTools.aload(client, names=["hash", "unit-convert"])
        message = Message.model_validate(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "test",
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
                "content": [
                    {"type": "text", "text": "Converting."},
                    {"type": "tool_use", "id": "toolu_1", "name": "unit-convert", "input": {"value": 2, "from": "km", "to": "m"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "hash", "input": {}},
                ],
            }
        )
        results = await toolset.arun(message.content)
    for result in results:
        jsonschema.validate(result, shape(ToolResultBlockParam))
    assert results[0]["tool_use_id"] == "toolu_1" and "is_error" not in results[0], results[0]
    assert json.loads(results[0]["content"])["result"] == 2000
    assert results[1]["is_error"] is True and json.loads(results[1]["content"])["error"]["param"] == "text"


def test_without_langchain_core_the_error_says_how_to_install_the_extra_from_the_repository(monkeypatch):
    # The suite has langchain-core: hide it and import the adapter afresh (both put back after).
    monkeypatch.setitem(sys.modules, "langchain_core", None)
    monkeypatch.setitem(sys.modules, "langchain_core.tools", None)
    monkeypatch.delitem(sys.modules, "toolgate.adapters.langchain", raising=False)
    with pytest.raises(ImportError) as raised:
        importlib.import_module("toolgate.adapters.langchain")
    message = str(raised.value)
    assert 'pip install "./sdk/python[langchain]"' in message
    assert 'pip install "langchain-core>=0.3"' in message
    # toolgate is not on PyPI: this command would install someone else's package.
    assert 'pip install "toolgate[langchain]"' not in message


def test_langchain_structured_tool_invokes(gateway, pro_key):
    from langchain_core.messages import ToolMessage
    from langchain_core.tools import StructuredTool

    from toolgate.adapters.langchain import langchain_tools

    client = Toolgate(api_key=pro_key, base_url=gateway.base_url)
    [tool] = langchain_tools(client, names=["hash"])
    assert isinstance(tool, StructuredTool) and tool.name == "hash"
    assert tool.args["text"]["type"] == "string"
    assert tool.invoke({"text": "lc"})["digest"] == hashlib.sha256(b"lc").hexdigest()
    message = tool.invoke({"type": "tool_call", "id": "tc_1", "name": "hash", "args": {"text": "lc", "algorithm": "md5"}})
    assert isinstance(message, ToolMessage) and message.tool_call_id == "tc_1"
    assert hashlib.md5(b"lc").hexdigest() in message.content
    assert "validation_failed" in tool.invoke({"text": 3})  # a failure goes back to the model as text


async def test_langchain_tool_runs_on_the_async_client(gateway, pro_key):
    from toolgate.adapters.langchain import langchain_tools

    async with AsyncToolgate(api_key=pro_key, base_url=gateway.base_url) as client:
        with pytest.raises(TypeError, match="pass the catalogue"):
            langchain_tools(client)
        [tool] = langchain_tools(client, await client.tools.list(), search="unit convert", limit=1)
        assert (await tool.ainvoke({"value": 3, "from": "m", "to": "cm"}))["result"] == 300


def test_what_the_model_reads_matches_the_typescript_library(gateway, pro_key):
    client = Toolgate(api_key=pro_key, base_url=gateway.base_url)
    before = gateway.balance(pro_key)
    [hash_tool] = AnthropicTools.load(client, names=["hash"]).tools
    assert re.search(r"\. \(Costs 1 credit, \$0\.002 per call\.\)$", hash_tool["description"])
    toolset = OpenAITools.load(client, names=["hash"])
    call = lambda id_, arguments: {"id": id_, "type": "function", "function": {"name": "hash", "arguments": arguments}}  # noqa: E731
    [not_object, not_json, blank] = [json.loads(m["content"]) for m in toolset.run([call("a", "[1]"), call("b", "{"), call("c", "  ")])]
    assert not_object == {"error": {"code": "validation_failed", "message": "The arguments must be a JSON object."}}
    assert not_json["error"]["code"] == "invalid_json" and not_json["error"]["message"].startswith("The arguments are not JSON: ")
    assert blank["error"]["code"] == "validation_failed" and blank["error"]["param"] == "text"  # blank is no arguments
    results = AnthropicTools.load(client, names=["hash"]).run([{"type": "tool_use", "id": "u", "name": "hash", "input": "text"}])
    assert results == [{"type": "tool_result", "tool_use_id": "u", "content": json.dumps({"error": {"code": "validation_failed", "message": "The arguments must be a JSON object."}}), "is_error": True}]
    assert gateway.balance(pro_key) == before  # nothing ran


def _capped(gateway: Any) -> Any:
    from toolgate import SpendingLimits

    # hash costs 2,000 USDC atomic units, js-sandbox 6,000: above this per-call cap.
    return SpendingLimits(max_per_call=2000, allowed_assets=[{"network": gateway.network, "asset": gateway.token_address}])


def _openai_call(id_: str, name: str, arguments: dict) -> dict:
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def test_a_spending_cap_is_raised_to_the_program_and_no_call_after_it_runs(gateway, wallet):
    from toolgate import ToolgateError
    from toolgate.adapters.langchain import langchain_tools

    before = gateway.token_balance(gateway.wallet_address)
    client = Toolgate(base_url=gateway.base_url, wallet=wallet, spending=_capped(gateway))
    toolset = OpenAITools.load(client, names=["hash", "js-sandbox"])
    with pytest.raises(ToolgateError) as caught:
        toolset.run([_openai_call("call_1", "hash", {"text": "before the cap"}), _openai_call("call_2", "js-sandbox", {"code": "1 + 1"}), _openai_call("call_3", "hash", {"text": "after the cap"})])
    assert (caught.value.status, caught.value.code) == (0, "spend_cap_exceeded") and "per-call cap" in caught.value.message
    assert client.spent == 2000  # the first hash only: call_3 did not run
    with pytest.raises(ToolgateError, match="spend_cap_exceeded"):
        AnthropicTools.load(client, names=["hash", "js-sandbox"]).run(
            [{"type": "tool_use", "id": "u1", "name": "js-sandbox", "input": {"code": "2 + 2"}}, {"type": "tool_use", "id": "u2", "name": "hash", "input": {"text": "after"}}]
        )
    [sandbox] = langchain_tools(client, names=["js-sandbox"])
    with pytest.raises(ToolgateError) as caught:
        sandbox.invoke({"code": "3 + 3"})  # not a ToolException handed to the model
    assert caught.value.code == "spend_cap_exceeded"
    assert client.spent == 2000
    assert gateway.token_balance(gateway.wallet_address) == before - 2000


async def test_a_spending_cap_is_raised_by_the_async_dispatchers_too(gateway, wallet):
    from toolgate import ToolgateError
    from toolgate.adapters.langchain import langchain_tools

    before = gateway.token_balance(gateway.wallet_address)
    async with AsyncToolgate(base_url=gateway.base_url, wallet=wallet, spending=_capped(gateway)) as client:
        toolset = await OpenAITools.aload(client, names=["hash", "js-sandbox"])
        with pytest.raises(ToolgateError, match="spend_cap_exceeded"):
            await toolset.arun([_openai_call("call_1", "js-sandbox", {"code": "1 + 1"}), _openai_call("call_2", "hash", {"text": "after the cap"})])
        [sandbox] = langchain_tools(client, await client.tools.list(), names=["js-sandbox"])
        with pytest.raises(ToolgateError, match="spend_cap_exceeded"):
            await sandbox.ainvoke({"code": "3 + 3"})
        assert client.spent == 0
    assert gateway.token_balance(gateway.wallet_address) == before
