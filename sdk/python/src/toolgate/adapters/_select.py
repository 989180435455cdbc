"""Choosing the tools to hand an agent: by name (or alias), or by a search over the catalogue."""

from __future__ import annotations

import re
from typing import Any, Sequence

from .._types import Tool

DEFAULT_SEARCH_LIMIT = 5

_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _score(tool: Tool, query: set[str]) -> int:
    names = _words(" ".join([tool.name, *tool.aliases]))
    title = _words(tool.title)
    description = _words(tool.description)
    return sum(3 * (w in names) + 2 * (w in title) + (w in description) for w in query)


def select_tools(
    tools: Sequence[Tool],
    *,
    names: Sequence[str] | None = None,
    search: str | None = None,
    limit: int | None = None,
    include_unavailable: bool = False,
) -> list[Tool]:
    """The tools to offer a model.

    :param names: tool names or aliases, in the order to offer them; an unknown one is a ValueError.
    :param search: words matched against names, titles and descriptions; the best ``limit``
        matches (default 5) are kept, best first.
    :param include_unavailable: keep tools the gateway lists as unavailable (no provider).
    """
    pool = [t for t in tools if include_unavailable or t.available]
    if names is not None:
        by_name: dict[str, Tool] = {}
        for tool in tools:
            for n in (tool.name, *tool.aliases):
                by_name[n] = tool
        missing = [n for n in names if n not in by_name]
        if missing:
            raise ValueError(f"No such tool: {', '.join(missing)}")
        chosen: list[Tool] = []
        for n in names:
            if by_name[n] not in chosen:
                chosen.append(by_name[n])
        return chosen[:limit] if limit else chosen
    if search is not None:
        query = _words(search)
        scored = sorted(((s, i, t) for i, t in enumerate(pool) if (s := _score(t, query)) > 0), key=lambda x: (-x[0], x[1]))
        return [t for _, _, t in scored][: limit or DEFAULT_SEARCH_LIMIT]
    return pool[:limit] if limit else pool


def model_schema(tool: Tool) -> dict[str, Any]:
    """The tool's input JSON Schema as model APIs take it: an object schema without ``$schema``,
    examples, or top-level combinators (which the OpenAI and Anthropic APIs refuse there; the
    gateway still enforces them and answers a clear 422)."""
    schema = {k: v for k, v in tool.input_schema.items() if k not in ("$schema", "examples", "oneOf", "anyOf", "allOf")}
    schema["type"] = "object"
    schema.setdefault("properties", {})
    return schema


MAX_DESCRIPTION = 1024
"""OpenAI's limit on a function's description."""


def describe(tool: Tool) -> str:
    """The description a model sees: what the tool does and what one call costs (the TypeScript
    library's words too); a long description is shortened so the price always fits."""
    price = f" (Costs {tool.price.credits} credit{'s' if tool.price.credits != 1 else ''}, ${tool.price.usd} per call.)"
    room = MAX_DESCRIPTION - len(price)
    text = tool.description if len(tool.description) <= room else tool.description[: room - 1] + "…"
    return text + price


def field(obj: Any, name: str, default: Any = None) -> Any:
    """Reads a field of an SDK object or of its dict form alike."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)
