"""Agent-framework adapters: the catalogue as tool definitions, and dispatchers that run a model's
tool calls through a Toolgate client.

- ``toolgate.adapters.openai``: OpenAI function-calling tools + ``OpenAITools.run(tool_calls)``.
- ``toolgate.adapters.anthropic``: Anthropic tool-use tools + ``AnthropicTools.run(content)``.
- ``toolgate.adapters.langchain``: LangChain ``StructuredTool``s (needs ``toolgate[langchain]``).

Each takes a subset of the catalogue (``names=[...]`` or ``search="..."``) so an agent is not
handed every tool at once; ``select_tools`` is that choice on its own.
"""

from ._select import select_tools

__all__ = ["select_tools"]
