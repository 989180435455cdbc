"""What the OpenAI and Anthropic adapters share: the offered subset, and running one model tool
call through a client (sync or async) into the text the model reads back.

A tool's failure (bad input, out of credits...) is returned to the model as an error result it can
react to, with the gateway's code, message and param; a failure on the client's side (network,
spending cap) is raised. Tools outside the offered
subset are refused the same way, without calling the gateway.
"""

from __future__ import annotations

import json
from typing import Any, Sequence, TypeVar

from .._errors import ToolgateError
from .._types import Tool
from ._select import select_tools

S = TypeVar("S", bound="Toolset")


def _tool_error(error: ToolgateError) -> str:
    """The gateway's refusal as a result the model can read; a failure on this side (no network,
    a spending cap: status 0) is the program's business and is raised."""
    if error.status == 0:
        raise error
    return _error_text(error.code, error.message, error.param)


def _error_text(code: str, message: str, param: str | None = None) -> str:
    error: dict[str, Any] = {"code": code, "message": message}
    if param:
        error["param"] = param
    return json.dumps({"error": error})


class Toolset:
    """A subset of the catalogue offered to a model, bound to the client that runs its calls."""

    def __init__(self, client: Any, tools: Sequence[Tool]) -> None:
        self.client = client
        self.catalogue = list(tools)
        self._by_name = {n: t for t in self.catalogue for n in (t.name, *t.aliases)}

    @classmethod
    def load(cls: type[S], client: Any, *, names: Sequence[str] | None = None, search: str | None = None, limit: int | None = None, include_unavailable: bool = False) -> S:
        """Reads the catalogue with a synchronous ``Toolgate`` and keeps the chosen subset."""
        return cls(client, select_tools(client.tools.list(), names=names, search=search, limit=limit, include_unavailable=include_unavailable))

    @classmethod
    async def aload(cls: type[S], client: Any, *, names: Sequence[str] | None = None, search: str | None = None, limit: int | None = None, include_unavailable: bool = False) -> S:
        """Reads the catalogue with an ``AsyncToolgate`` and keeps the chosen subset."""
        return cls(client, select_tools(await client.tools.list(), names=names, search=search, limit=limit, include_unavailable=include_unavailable))

    arguments_are_text = False
    """Whether a call's arguments come as JSON text (OpenAI's ``arguments``) rather than as the
    object itself (Anthropic's ``input``, where a string is not an object, as in TypeScript)."""

    def _prepare(self, name: str, arguments: Any) -> tuple[Tool | None, dict[str, Any] | None, str | None]:
        tool = self._by_name.get(name)
        if tool is None:
            return None, None, _error_text("tool_not_offered", f"The tool {name!r} is not among the tools offered.")
        if self.arguments_are_text and isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError as error:
                return None, None, _error_text("invalid_json", f"The arguments are not JSON: {error}")
        if not isinstance(arguments, dict):
            return None, None, _error_text("validation_failed", "The arguments must be a JSON object.")
        return tool, arguments, None

    def execute(self, name: str, arguments: Any) -> tuple[str, bool]:
        """Runs one call with a synchronous client: (text for the model, is_error)."""
        tool, args, refused = self._prepare(name, arguments)
        if refused is not None:
            return refused, True
        assert tool is not None
        try:
            return json.dumps(self.client.tools.call(tool.name, args)), False
        except ToolgateError as error:
            return _tool_error(error), True

    async def aexecute(self, name: str, arguments: Any) -> tuple[str, bool]:
        """Runs one call with an ``AsyncToolgate``."""
        tool, args, refused = self._prepare(name, arguments)
        if refused is not None:
            return refused, True
        assert tool is not None
        try:
            return json.dumps(await self.client.tools.call(tool.name, args)), False
        except ToolgateError as error:
            return _tool_error(error), True
