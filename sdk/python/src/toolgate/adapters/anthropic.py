"""Anthropic tool use: the catalogue as ``tools=[...]`` for the Messages API, and a dispatcher that
runs the ``tool_use`` blocks of a response through the client.

    toolset = AnthropicTools.load(client, names=["hash", "unit-convert"])
    response = anthropic.messages.create(model=..., max_tokens=..., messages=messages, tools=toolset.tools)
    messages += [{"role": "assistant", "content": response.content},
                 {"role": "user", "content": toolset.run(response.content)}]
"""

from __future__ import annotations

from typing import Any, Iterable

from .._types import Tool
from ._dispatch import Toolset
from ._select import describe, field, model_schema


def anthropic_tool(tool: Tool) -> dict[str, Any]:
    """One tool as a Messages API custom tool (``ToolParam``)."""
    return {"name": tool.name, "description": describe(tool), "input_schema": model_schema(tool)}


def _or_empty(value: Any) -> Any:
    return {} if value is None else value


class AnthropicTools(Toolset):
    @property
    def tools(self) -> list[dict[str, Any]]:
        return [anthropic_tool(t) for t in self.catalogue]

    @staticmethod
    def _uses(content: Iterable[Any]) -> list[tuple[str, str, Any]]:
        # A missing or null input is no arguments (as in TypeScript); anything else must be an object.
        return [(field(b, "id"), field(b, "name"), _or_empty(field(b, "input"))) for b in content if field(b, "type") == "tool_use"]

    @staticmethod
    def _result(use_id: str, text: str, is_error: bool) -> dict[str, Any]:
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": use_id, "content": text}
        if is_error:
            result["is_error"] = True
        return result

    def run(self, content: Iterable[Any]) -> list[dict[str, Any]]:
        """Runs each ``tool_use`` block (other blocks are skipped); returns the ``tool_result`` blocks
        for the next user message."""
        return [self._result(use_id, *self.execute(name, arguments)) for use_id, name, arguments in self._uses(content)]

    async def arun(self, content: Iterable[Any]) -> list[dict[str, Any]]:
        """``run`` with an ``AsyncToolgate``."""
        return [self._result(use_id, *(await self.aexecute(name, arguments))) for use_id, name, arguments in self._uses(content)]
