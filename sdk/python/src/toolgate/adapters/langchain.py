"""LangChain: the catalogue as ``StructuredTool``s (langchain-core), each running through the
client: ``invoke`` with a ``Toolgate``, ``ainvoke`` with an ``AsyncToolgate``.

    tools = langchain_tools(client, search="convert units")
    agent = create_agent(model, tools)        # or llm.bind_tools(tools)

Needs langchain-core: the ``langchain`` extra, ``pip install "./sdk/python[langchain]"`` from a clone
of the repository (toolgate is not on PyPI). The gateway's refusal of a call raises
``ToolException`` carrying its code and message, which LangChain hands back to the model
(``handle_tool_error``); a failure on the client's side (status 0: a spending cap, the network, a
payment) is raised as the ``ToolgateError`` itself, out of the agent to the program, as the OpenAI
and Anthropic dispatchers do.
"""

from __future__ import annotations

import inspect
from typing import Any, Sequence

try:
    from langchain_core.tools import StructuredTool, ToolException
except ImportError as error:  # pragma: no cover - depends on the extra
    # Not `pip install "toolgate[langchain]"`: toolgate is not on PyPI, so that would install
    # another project's package of the same name.
    raise ImportError(
        'The LangChain adapter needs langchain-core: pip install "langchain-core>=0.3", or install toolgate '
        'with its langchain extra from a clone of the repository: pip install "./sdk/python[langchain]" '
        '(toolgate is not on PyPI: "toolgate[langchain]" would install another project\'s package)'
    ) from error

from .._errors import ToolgateError
from .._types import Tool
from ._select import describe, model_schema, select_tools


def _tool_exception(error: ToolgateError) -> ToolException:
    where = f" (param {error.param})" if error.param else ""
    return ToolException(f"{error.code}: {error.message}{where}")


def langchain_tool(client: Any, tool: Tool) -> StructuredTool:
    """One tool as a ``StructuredTool`` whose arguments follow the tool's JSON Schema."""
    is_async = inspect.iscoroutinefunction(client.tools.call)

    def run(**kwargs: Any) -> dict[str, Any]:
        try:
            return client.tools.call(tool.name, kwargs)  # type: ignore[no-any-return]
        except ToolgateError as error:
            if error.status == 0:
                raise  # a failure on this side (a spending cap the caller set, no network): the program's
            raise _tool_exception(error) from error

    async def arun(**kwargs: Any) -> dict[str, Any]:
        try:
            return await client.tools.call(tool.name, kwargs)  # type: ignore[no-any-return]
        except ToolgateError as error:
            if error.status == 0:
                raise  # a failure on this side (a spending cap the caller set, no network): the program's
            raise _tool_exception(error) from error

    return StructuredTool.from_function(
        func=None if is_async else run,
        coroutine=arun if is_async else None,
        name=tool.name,
        description=describe(tool),
        args_schema=model_schema(tool),
        handle_tool_error=True,
    )


def langchain_tools(client: Any, tools: Sequence[Tool] | None = None, *, names: Sequence[str] | None = None, search: str | None = None, limit: int | None = None, include_unavailable: bool = False) -> list[StructuredTool]:
    """The chosen tools as ``StructuredTool``s. With a synchronous client the catalogue is read
    here; with an ``AsyncToolgate`` pass ``tools=await client.tools.list()``."""
    if tools is None:
        if inspect.iscoroutinefunction(client.tools.list):
            raise TypeError("With an AsyncToolgate, pass the catalogue: langchain_tools(client, tools=await client.tools.list(), ...)")
        tools = client.tools.list()
    return [langchain_tool(client, t) for t in select_tools(list(tools), names=names, search=search, limit=limit, include_unavailable=include_unavailable)]
