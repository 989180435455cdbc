"""Choosing the tools to hand an agent: by name (or alias), or by a search over the catalogue."""

from __future__ import annotations

import json
import unicodedata
from typing import Any, Sequence

from .._errors import ToolgateError
from .._types import Tool

DEFAULT_SEARCH_LIMIT = 5

def _words(text: str) -> set[str]:
    """Runs of Unicode letters, marks and digits (NFKC, lower-cased), as the gateway's own search
    reads words (``re`` has no Unicode property classes, hence the categories)."""
    found: set[str] = set()
    word: list[str] = []
    for ch in unicodedata.normalize("NFKC", text).lower() + " ":
        if unicodedata.category(ch)[0] in "LMN":
            word.append(ch)
        elif word:
            found.add("".join(word))
            word = []
    return found


def _score(tool: Tool, query: set[str]) -> int:
    names = _words(" ".join([tool.name, *tool.aliases]))
    title = _words(tool.title)
    description = _words(tool.description)
    return sum(3 * (w in names) + 2 * (w in title) + (w in description) for w in query)


def _edit_distance(a: str, b: str) -> int:
    """How many single-character edits (insert, delete, replace, swap two neighbours) turn ``a``
    into ``b``: a swap counts once, as "hsah" is one slip from "hash"."""
    d = [[i if j == 0 else j if i == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def closest_tool_name(name: str, known: Sequence[str]) -> str | None:
    """The catalogue name (or alias) a mistyped name most likely meant: a third of it wrong at most."""
    best: tuple[int, str] | None = None
    for candidate in known:
        distance = _edit_distance(name.lower(), candidate)
        if distance <= max(1, len(name) // 3) and (best is None or distance < best[0]):
            best = (distance, candidate)
    return best[1] if best else None


def _invalid(message: str) -> ToolgateError:
    return ToolgateError(status=0, code="invalid_argument", message=message)


def select_tools(
    tools: Sequence[Tool],
    *,
    names: Sequence[str] | None = None,
    search: str | None = None,
    limit: int | None = None,
    include_unavailable: bool = False,
) -> list[Tool]:
    """The tools to offer a model (the TypeScript library's ``selectTools``, word for word).

    :param names: exactly these tools (names or aliases), in this order, even when the gateway
        lists one as unavailable (it was asked for by name). A name the catalogue does not have
        raises ``ToolgateError`` ``invalid_argument`` naming the closest tool: it is almost always
        a typo.
    :param search: words matched (whole words) against names and aliases (weight 3), titles (2)
        and descriptions (1); the best ``limit`` tools are kept, best first.
    :param limit: at most this many tools; default 5 for a search, all otherwise.
    :param include_unavailable: keep tools the gateway lists as unavailable (no provider) in a
        search or the whole catalogue.
    """
    if names is not None and search is not None:
        raise _invalid("Pass names or search, not both.")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0):
        raise _invalid(f"limit must be a positive integer, not {json.dumps(limit)}.")
    if names is not None:
        by_name: dict[str, Tool] = {}
        for tool in tools:
            for n in (tool.name, *tool.aliases):
                by_name[n] = tool
        unknown = [n for n in names if n not in by_name]
        if unknown:

            def named(n: str) -> str:
                guess = closest_tool_name(n, list(by_name))
                return f"{json.dumps(n)} (did you mean {json.dumps(guess)}?)" if guess else json.dumps(n)

            raise _invalid(f"No such tool: {', '.join(named(n) for n in unknown)}.")
        chosen: list[Tool] = []
        for n in names:
            if by_name[n] not in chosen:
                chosen.append(by_name[n])
        return chosen[:limit]
    pool = [t for t in tools if include_unavailable or t.available]
    if search is None:
        return pool[:limit]
    query = _words(search)
    scored = sorted(((s, i, t) for i, t in enumerate(pool) if (s := _score(t, query)) > 0), key=lambda x: (-x[0], x[1]))
    return [t for _, _, t in scored][: limit or DEFAULT_SEARCH_LIMIT]


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
