"""OpenAI function calling: the catalogue as ``tools=[...]`` for Chat Completions, and a dispatcher
that runs an assistant message's ``tool_calls`` through the client.

    toolset = OpenAITools.load(client, search="hash a text")
    completion = openai.chat.completions.create(model=..., messages=messages, tools=toolset.tools)
    message = completion.choices[0].message
    messages += [message, *toolset.run(message.tool_calls or [])]
"""

from __future__ import annotations

from typing import Any, Iterable

from .._types import Tool
from ._dispatch import Toolset
from ._select import describe, field, model_schema


def openai_tool(tool: Tool) -> dict[str, Any]:
    """One tool as a Chat Completions function tool (``ChatCompletionToolParam``)."""
    return {"type": "function", "function": {"name": tool.name, "description": describe(tool), "parameters": model_schema(tool)}}


class OpenAITools(Toolset):
    arguments_are_text = True

    @property
    def tools(self) -> list[dict[str, Any]]:
        return [openai_tool(t) for t in self.catalogue]

    @staticmethod
    def _calls(tool_calls: Iterable[Any]) -> list[tuple[str, str, Any]]:
        calls = []
        for call in tool_calls:
            function = field(call, "function")
            calls.append((field(call, "id"), field(function, "name"), field(function, "arguments", "{}")))
        return calls

    def run(self, tool_calls: Iterable[Any]) -> list[dict[str, Any]]:
        """Runs each tool call (SDK objects or dicts) and returns the ``role: "tool"`` messages."""
        messages = []
        for call_id, name, arguments in self._calls(tool_calls):
            content, _ = self.execute(name, arguments)
            messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
        return messages

    async def arun(self, tool_calls: Iterable[Any]) -> list[dict[str, Any]]:
        """``run`` with an ``AsyncToolgate``."""
        messages = []
        for call_id, name, arguments in self._calls(tool_calls):
            content, _ = await self.aexecute(name, arguments)
            messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
        return messages
