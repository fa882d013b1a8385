"""Helpers for the SDKs whose messages the file readers also know: OpenAI chat, Anthropic and
the Claude Agent SDK, Gemini, LangChain/LangGraph, MCP and OpenTelemetry. Each dumps its input
to plain values and runs the file format's own dialect over it."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from ..sources.anthropic import AnthropicDialect
from ..sources.gemini import GeminiDialect
from ..sources.langchain import LangChainDialect
from ..sources.mcp import MCPDialect
from ..sources.openai import OpenAIDialect
from ..sources.otel import OTelDialect
from ._convert import _get, _plain, _run

# ---------------------------------------------------------------------------------------------
# OpenAI


def _openai_messages(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    if not isinstance(data, dict):
        return []
    if isinstance(data.get("choices"), list):
        return [c.get("message", c) if isinstance(c, dict) else c for c in data["choices"]]
    if isinstance(data.get("messages"), list):
        return list(data["messages"])
    return [data]


def from_openai(response: Any) -> list[dict[str, Any]]:
    """Calls from an OpenAI chat completion, one message, or a list of messages.

    ``tool`` messages in a list give their calls' results (paired by ``tool_call_id``).

    Args:
        response: a ``ChatCompletion`` (or its dict), a message (dict or SDK object), a list of
            messages, or ``{"messages": [...]}``.

    Returns:
        The calls in order.
    """
    return _run(OpenAIDialect(), _openai_messages(_plain(response)))


# ---------------------------------------------------------------------------------------------
# Anthropic and the Claude Agent SDK


def _anthropic_messages(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        return list(data["messages"])
    return [data]


def from_anthropic(response: Any) -> list[dict[str, Any]]:
    """Calls from an Anthropic ``Message`` or a list of messages.

    ``tool_use`` blocks are the calls; ``tool_result`` blocks in later user messages give their
    results and ``is_error``, paired by ``tool_use_id``.

    Args:
        response: a ``Message`` (dict or SDK object), a list of them, or ``{"messages": [...]}``.

    Returns:
        The calls in order.
    """
    return _run(AnthropicDialect(), _anthropic_messages(_plain(response)))


_CLAUDE_BLOCKS = {
    "ToolUseBlock": "tool_use",
    "ToolResultBlock": "tool_result",
    "TextBlock": "text",
    "ThinkingBlock": "thinking",
}
_CLAUDE_ROLES = {"AssistantMessage": "assistant", "UserMessage": "user"}


def _claude_message(msg: Any) -> Any:
    if not isinstance(msg, dict):
        return msg
    inner = msg.get("message")
    if msg.get("type") in ("assistant", "user") and isinstance(inner, dict):
        msg = inner  # the CLI's stream-json line form
    kind = msg.pop("__class__", None)
    if "role" not in msg and kind in _CLAUDE_ROLES:
        msg["role"] = _CLAUDE_ROLES[kind]
    content = msg.get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict):
                block_kind = block.pop("__class__", None)
                if "type" not in block and block_kind in _CLAUDE_BLOCKS:
                    block["type"] = _CLAUDE_BLOCKS[block_kind]
    return msg


def from_claude_agent_sdk(messages: Any) -> list[dict[str, Any]]:
    """Calls from the Claude Agent SDK's messages (``AssistantMessage``/``UserMessage``).

    Args:
        messages: the messages the SDK's ``query()`` yielded (objects or dicts, including the
            CLI's ``stream-json`` lines), as a list.

    Returns:
        The calls in order, with ``ToolResultBlock`` results and ``is_error``.
    """
    data = _plain(messages, tag=True)
    items = data if isinstance(data, list) else [data]
    return _run(AnthropicDialect(), [_claude_message(m) for m in items])


# ---------------------------------------------------------------------------------------------
# Gemini, LangChain/LangGraph, MCP, OTel


def from_gemini(response: Any) -> list[dict[str, Any]]:
    """Calls from a Gemini ``GenerateContentResponse``, a ``Content`` or a list of contents.

    ``functionResponse`` parts give results (paired by id, or by name in order).

    Args:
        response: an SDK object or dict, in camelCase (REST) or snake_case (SDK dump) form.

    Returns:
        The calls in order.
    """
    return _run(GeminiDialect(), [_plain(response)])


def _langgraph_items(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        return list(data["messages"])
    return [data]


def from_langgraph(state: Any) -> list[dict[str, Any]]:
    """Calls from a LangGraph state or a list of LangChain messages.

    ``AIMessage.tool_calls`` are the calls; ``ToolMessage`` results (``status == "error"`` is a
    failure) are paired by ``tool_call_id``. Agent actions and ``intermediate_steps`` work too.

    Args:
        state: a state with ``messages`` (dict key or attribute), or a list of messages.

    Returns:
        The calls in order.
    """
    messages = _get(state, "messages") if not isinstance(state, list) else state
    if messages is None:
        messages = state
    return _run(LangChainDialect(), _langgraph_items(_plain(messages)))


def from_mcp(messages: Any) -> list[dict[str, Any]]:
    """Calls from MCP JSON-RPC messages (a list, or a ``toolscore mcp record`` dict).

    Returns:
        The ``tools/call`` requests in order, with their responses' results and failures.
    """
    return _run(MCPDialect(), [_plain(messages)])


def _otel_span(span: Any) -> Any:
    """An OpenTelemetry SDK ``ReadableSpan`` as an OTLP JSON span dict; dicts as they are."""
    if isinstance(span, Mapping):
        return span
    attrs = getattr(span, "attributes", None)
    if attrs is None or not hasattr(span, "start_time"):
        return _plain(span)
    status = getattr(span, "status", None)
    code = getattr(getattr(status, "status_code", None), "name", None)
    return {
        "name": getattr(span, "name", None),
        "attributes": {str(k): _plain(v) for k, v in dict(attrs).items()},
        "startTimeUnixNano": getattr(span, "start_time", None),
        "endTimeUnixNano": getattr(span, "end_time", None),
        "status": {
            "code": f"STATUS_CODE_{code}" if code else None,
            "message": getattr(status, "description", None),
        },
    }


def _otel_items(data: Any) -> Any:
    if hasattr(data, "DESCRIPTOR") and hasattr(data, "SerializeToString"):
        # protobuf is not a dependency: only an OTLP protobuf request brings it along
        json_format = importlib.import_module("google.protobuf.json_format")
        return json_format.MessageToDict(data)
    if isinstance(data, (list, tuple)):
        return [_otel_span(s) for s in data]
    return _otel_span(data)


def from_otel(trace: Any) -> list[dict[str, Any]]:
    """Calls from OpenTelemetry data: an OTLP JSON export, a list of spans, SDK spans, or an
    OTLP protobuf ``ExportTraceServiceRequest``.

    Tool spans are those of the GenAI conventions (``execute_tool``) or OpenInference
    (``TOOL``); within the input they are sorted by start time.

    Returns:
        The calls, each with ``result``, ``is_error``, ``duration`` and ``id`` where recorded.
    """
    return _run(OTelDialect(), [_otel_items(trace)])
