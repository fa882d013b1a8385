"""Calls from in-memory agent outputs: SDK response objects, message lists, OTel exports.

Each ``from_*`` helper turns what an SDK hands back into call dicts ``{"tool", "args"}`` plus
``"result"``, ``"is_error"``, ``"error"``, ``"duration"``, ``"id"`` and ``"timestamp"`` where the
input records them, ready for :func:`toolscore.evaluate`. Objects with ``model_dump()`` (the
OpenAI, Anthropic and Gemini SDK types, LangChain messages) are dumped first, dataclasses and
plain objects are read field by field, and dicts are used as they are.

The helpers run the same dialects (``toolscore.sources.<format>``) as the streamed readers, so a
trace gives the same calls whether it is read from a file or passed in memory. One consequence,
unlike Toolscore 1.10's helpers: a JSON-string argument that is not valid JSON is kept as
``{"raw": s}`` (as the file readers do) rather than replaced by ``{}``.

:func:`auto_extract` picks the helper from the input's shape; ``evaluate(expected, response)``
calls it, so passing an SDK response directly just works.

Where things are: plain values, call dicts and the in-memory dialect run in ``_convert``;
the helpers of SDKs the file readers know in ``_messages``; Pydantic AI and the OpenAI Agents
SDK, with their own small dialects, in ``_agents``; :func:`auto_extract` here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._crewai import from_crewai
from ..sources.gemini import looks_like_gemini
from ..sources.otel import is_tool_span
from ._agents import from_openai_agents, from_pydantic_ai
from ._convert import _plain, call_to_dict, run_dialect
from ._messages import (
    from_anthropic,
    from_claude_agent_sdk,
    from_gemini,
    from_langgraph,
    from_mcp,
    from_openai,
    from_otel,
)

__all__ = [
    "auto_extract",
    "call_to_dict",
    "from_anthropic",
    "from_claude_agent_sdk",
    "from_crewai",
    "from_gemini",
    "from_langgraph",
    "from_mcp",
    "from_openai",
    "from_openai_agents",
    "from_otel",
    "from_pydantic_ai",
    "run_dialect",
]


# ---------------------------------------------------------------------------------------------
# auto_extract


def _looks_like_otel(data: Any) -> bool:
    if isinstance(data, Mapping):
        return "resourceSpans" in data or "resource_spans" in data
    if isinstance(data, list) and data:
        head = data[:50]
        if any(is_tool_span(item) for item in head if isinstance(item, dict)):
            return True
        return any(
            not isinstance(item, Mapping)
            and hasattr(item, "start_time")
            and hasattr(item, "attributes")
            for item in head
        )
    return hasattr(data, "resource_spans") and hasattr(data, "SerializeToString")


def _has_tool_calls(messages: Any) -> bool:
    return isinstance(messages, list) and any(
        isinstance(m, dict) and m.get("tool_calls") for m in messages
    )


def _is_openai_chat(messages: list[Any]) -> bool:
    """OpenAI chat messages (a ``role``) that carry calls, not LangChain ones (a ``type``)."""
    return any(
        isinstance(m, dict) and "role" in m and (m.get("tool_calls") or m.get("function_call"))
        for m in messages
    )


def _has_block(messages: list[Any], kind: str) -> bool:
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == kind for b in content
        ):
            return True
    return False


def _is_mcp(data: Any) -> bool:
    if isinstance(data, dict):
        if "jsonrpc" in data or data.get("format") == "mcp":
            return True
        data = data.get("messages")
    return (
        isinstance(data, list)
        and bool(data)
        and isinstance(data[0], dict)
        and data[0].get("jsonrpc") == "2.0"
    )


def _is_gemini_list(data: list[Any]) -> bool:
    return any(looks_like_gemini(item) for item in data[:50])


def _nonempty(calls: list[dict[str, Any]], what: str) -> list[dict[str, Any]]:
    if not calls:
        raise ValueError(f"Detected {what} output but no tool calls could be extracted from it")
    return calls


def auto_extract(actual: Any) -> list[Any]:
    """The calls in ``actual``, whatever produced it; what ``evaluate()`` runs on its input.

    Tried in this order (Toolscore 1.10's, extended to the formats the file readers know):

    1. A list that is empty or starts with a call dict (``{"tool": ...}``): returned as is.
    2. OpenTelemetry data (an OTLP export, tool spans, SDK spans): :func:`from_otel`.
    3. SDK objects: ``model_dump()`` first; otherwise Pydantic AI (``all_messages()``), OpenAI
       Agents (``new_items``) and LangGraph-like states (``messages`` with ``tool_calls``).
    4. A dict: ``choices`` (OpenAI), a ``content`` list of typed blocks (Anthropic),
       ``candidates`` (Gemini), JSON-RPC (MCP), a state with ``messages`` (Anthropic
       ``tool_use`` blocks, OpenAI ``role`` messages with calls, else LangGraph),
       ``new_items``/Responses ``output`` (OpenAI Agents).
    5. A non-empty list of messages: JSON-RPC (MCP), ``tool_use`` blocks (Anthropic / Claude
       Agent SDK), Gemini parts, OpenAI chat messages with calls, ``tool_calls`` (LangGraph),
       Responses items, Pydantic AI ``parts``.

    Args:
        actual: what the agent produced.

    Returns:
        A list of call dicts.

    Raises:
        TypeError: no known shape fits.
        ValueError: a shape was recognized but held no tool call where one was required.
    """
    if isinstance(actual, list) and (
        not actual or (isinstance(actual[0], dict) and "tool" in actual[0])
    ):
        return actual
    if _looks_like_otel(actual):
        return from_otel(actual)
    data = actual
    if not isinstance(actual, (dict, list)):
        if callable(getattr(actual, "model_dump", None)):
            data = _plain(actual)
        elif callable(getattr(actual, "all_messages", None)):
            return from_pydantic_ai(actual)
        elif getattr(actual, "new_items", None) is not None:
            return from_openai_agents(actual)
        elif _has_tool_calls(_plain(getattr(actual, "messages", None))):
            return from_langgraph(actual)
        elif hasattr(actual, "__dict__"):
            data = _plain(actual)
    else:
        data = _plain(actual)
    if isinstance(data, dict):
        return _from_dict(data, actual)
    if isinstance(data, list) and data:
        return _from_list(data)
    raise TypeError(
        f"Cannot auto-detect provider format from {type(actual).__name__}. Pass a list of "
        "call dicts, or use a from_* helper (from_openai, from_anthropic, ...)."
    )


def _from_dict(data: dict[str, Any], actual: Any) -> list[Any]:
    if "choices" in data:
        return from_openai(data)
    content = data.get("content")
    if isinstance(content, list) and any(isinstance(b, dict) and "type" in b for b in content):
        return from_anthropic(data)
    if "candidates" in data or "automaticFunctionCallingHistory" in data:
        return from_gemini(data)
    if _is_mcp(data):
        return from_mcp(data)
    messages = data.get("messages")
    if isinstance(messages, list) and messages:
        if _has_block(messages, "tool_use"):
            return from_anthropic(messages)
        if _is_openai_chat(messages):
            return from_openai(messages)
        if _has_tool_calls(messages):
            return _nonempty(from_langgraph(messages), "a LangGraph state")
    if data.get("new_items") is not None:
        return from_openai_agents(data)
    if isinstance(data.get("output"), list) and any(
        isinstance(i, dict) and i.get("type") == "function_call" for i in data["output"]
    ):
        return from_openai_agents(data)
    if callable(getattr(actual, "all_messages", None)):
        return from_pydantic_ai(actual)
    raise TypeError(
        f"Cannot auto-detect provider format from {type(actual).__name__}. Pass a list of "
        "call dicts, or use a from_* helper (from_openai, from_anthropic, ...)."
    )


def _from_list(data: list[Any]) -> list[Any]:
    if _is_mcp(data):
        return from_mcp(data)
    if _has_block(data, "tool_use"):
        return from_anthropic(data)
    if _is_gemini_list(data):
        return from_gemini(data)
    if _is_openai_chat(data):
        return from_openai(data)
    if _has_tool_calls(data):
        return _nonempty(from_langgraph(data), "a LangGraph message list")
    if any(
        isinstance(i, dict) and i.get("type") in ("function_call", "tool_call_item") for i in data
    ):
        return from_openai_agents(data)
    if any(isinstance(i, dict) and isinstance(i.get("parts"), list) for i in data):
        return from_pydantic_ai(data)
    raise TypeError(
        f"Cannot auto-detect provider format from {type(data).__name__}. Pass a list of "
        "call dicts, or use a from_* helper (from_openai, from_anthropic, ...)."
    )
