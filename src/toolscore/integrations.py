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
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from ._crewai import from_crewai
from .calls import Batch, Location, ToolCall
from .sources._base import Dialect
from .sources.gemini import GeminiDialect, looks_like_gemini
from .sources.langchain import LangChainDialect
from .sources.mcp import MCPDialect
from .sources.otel import OTelDialect, is_tool_span

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

_MAX_DEPTH = 64
_SCALARS = (str, int, float, bool, type(None))


# ---------------------------------------------------------------------------------------------
# Turning SDK objects into plain JSON-like values


def _plain(obj: Any, depth: int = 0, *, tag: bool = False) -> Any:
    """``obj`` as dicts, lists and scalars: ``model_dump()`` for pydantic models, fields for
    dataclasses, public attributes for other objects. ``tag`` adds ``"__class__"`` to converted
    objects (for SDKs whose blocks carry their kind only in the class name)."""
    if isinstance(obj, _SCALARS) or depth > _MAX_DEPTH:
        return obj
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, Mapping):
        return {str(k): _plain(v, depth + 1, tag=tag) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v, depth + 1, tag=tag) for v in obj]
    dump = getattr(obj, "model_dump", None)
    if callable(dump) and not isinstance(obj, type):
        try:
            dumped = dump()
        except TypeError:
            dumped = None
        if isinstance(dumped, Mapping):
            out = _plain(dumped, depth + 1, tag=tag)
            if tag:
                out.setdefault("__class__", type(obj).__name__)
            return out
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {
            f.name: _plain(getattr(obj, f.name, None), depth + 1, tag=tag)
            for f in dataclasses.fields(obj)
        }
    elif hasattr(obj, "__dict__") and not isinstance(obj, type) and not callable(obj):
        out = {
            k: _plain(v, depth + 1, tag=tag) for k, v in vars(obj).items() if not k.startswith("_")
        }
    else:
        return obj
    if tag:
        out.setdefault("__class__", type(obj).__name__)
    return out


def _get(obj: Any, key: str) -> Any:
    """``obj[key]`` for a mapping, ``obj.key`` otherwise (``None`` when absent)."""
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def call_to_dict(call: ToolCall) -> dict[str, Any]:
    """The call as the dict ``evaluate()`` reads (Toolscore's in-memory call form)."""
    out: dict[str, Any] = {"tool": call.tool, "args": call.args}
    md = call.metadata
    if call.result is not None:
        out["result"] = call.result
    if "is_error" in md or "error" in md:
        out["is_error"] = call.is_error
        if call.error is not None:
            out["error"] = call.error
    if call.duration is not None:
        out["duration"] = call.duration
    if md.get("id") is not None:
        out["id"] = md["id"]
    elif md.get("jsonrpc_id") is not None:
        out["id"] = md["jsonrpc_id"]
    if call.timestamp is not None:
        out["timestamp"] = call.timestamp
    return out


def run_dialect(dialect: Dialect, items: Iterable[Any]) -> list[ToolCall]:
    """Feed in-memory items through ``dialect`` and return every call, results filled in.

    This is the in-memory twin of a streamed read: the same ``item()``/``close()`` sequence.
    """
    out = Batch()
    location: Location | None = None
    for item in items:
        dialect.item(item, location, out)
    dialect.close(out)
    return out.calls


def _run(dialect: Dialect, items: Iterable[Any]) -> list[dict[str, Any]]:
    return [call_to_dict(call) for call in run_dialect(dialect, items)]


def _dialect(module: str) -> Dialect:
    """A fresh instance of ``toolscore.sources.<module>.DIALECT``."""
    mod = importlib.import_module(f"toolscore.sources.{module}")
    cls: type[Dialect] = mod.DIALECT
    return cls()


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
    return _run(_dialect("openai"), _openai_messages(_plain(response)))


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
    return _run(_dialect("anthropic"), _anthropic_messages(_plain(response)))


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
    return _run(_dialect("anthropic"), [_claude_message(m) for m in items])


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


# ---------------------------------------------------------------------------------------------
# Pydantic AI and the OpenAI Agents SDK (no file format of their own: small dialects here)


def _json_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return {}
    return value if isinstance(value, dict) else {}


class _PydanticAIDialect(Dialect):
    """Pydantic AI messages: ``tool-call`` parts, answered by ``tool-return`` or
    ``retry-prompt`` (a failure) parts with the same ``tool_call_id``."""

    name = "pydantic_ai"

    def item(self, obj: Any, location: Location | None, out: Batch) -> None:
        parts = obj.get("parts") if isinstance(obj, dict) else None
        if not isinstance(parts, list):
            return
        for part in parts:
            if not isinstance(part, dict):
                continue
            kind = part.get("part_kind") or part.get("__class__")
            call_id = part.get("tool_call_id")
            if not isinstance(call_id, (str, int)) or call_id == "":
                call_id = None
            if kind in ("tool-call", "ToolCallPart") and part.get("tool_name"):
                md: dict[str, Any] = {"format": "pydantic_ai"}
                if call_id is not None:
                    md["id"] = call_id
                call = ToolCall(tool=part["tool_name"], args=_json_dict(part.get("args")))
                call.metadata = md
                if call_id is None:
                    self.new_call(call, out)
                else:
                    self.new_call(call, out, complete=False)
                    self.pending[call_id] = call
            elif kind in ("tool-return", "ToolReturnPart", "retry-prompt", "RetryPromptPart"):
                waiting = self.pending.pop(call_id, None) if call_id is not None else None
                if waiting is None:
                    continue
                failed = kind in ("retry-prompt", "RetryPromptPart")
                waiting.metadata["is_error"] = failed
                if failed:
                    content = part.get("content")
                    waiting.metadata["error"] = (
                        content if isinstance(content, str) else orjson.dumps(content).decode()
                    )
                else:
                    waiting.result = part.get("content")
                self.complete(waiting, out)


def from_pydantic_ai(result: Any) -> list[dict[str, Any]]:
    """Calls from a Pydantic AI run: its ``all_messages()`` or a list of ``ModelMessage``.

    Returns:
        The ``ToolCallPart`` calls, with ``ToolReturnPart`` results; a ``RetryPromptPart``
        answering a call marks it failed.
    """
    all_messages = getattr(result, "all_messages", None)
    messages = all_messages() if callable(all_messages) else result
    data = _plain(messages, tag=True)
    return _run(_PydanticAIDialect(), data if isinstance(data, list) else [data])


class _ResponsesDialect(Dialect):
    """OpenAI Responses/Agents items: ``function_call`` answered by ``function_call_output``
    (by ``call_id``); ``mcp_call`` items carry their own output and error."""

    name = "openai_responses"

    def item(self, obj: Any, location: Location | None, out: Batch) -> None:
        if not isinstance(obj, dict):
            return
        raw = obj.get("raw_item")
        if isinstance(raw, dict):
            if obj.get("type") == "tool_call_output_item" and "output" not in raw:
                raw = {**raw, "output": obj.get("output")}
            obj = raw
        kind = obj.get("type")
        call_id = obj.get("call_id")
        if not isinstance(call_id, (str, int)):
            call_id = None
        if kind in ("function_call", "custom_tool_call", "mcp_call") and obj.get("name"):
            md: dict[str, Any] = {"format": "openai_responses"}
            if call_id is not None:
                md["id"] = call_id
            raw_args = obj.get("arguments", obj.get("input"))
            args = _json_dict(raw_args) if isinstance(raw_args, (str, dict)) else {}
            if isinstance(raw_args, str) and not args and raw_args.strip() not in ("", "{}"):
                args = {"raw": raw_args}
            call = ToolCall(tool=obj["name"], args=args, metadata=md, location=location)
            if kind == "mcp_call":
                call.result = obj.get("output")
                err = obj.get("error")
                md["is_error"] = bool(err)
                if err:
                    md["error"] = err if isinstance(err, str) else str(err)
                self.new_call(call, out)
            elif call_id is None:
                self.new_call(call, out)
            else:
                self.new_call(call, out, complete=False)
                self.pending[call_id] = call
        elif kind in ("function_call_output", "custom_tool_call_output") and call_id is not None:
            waiting = self.pending.pop(call_id, None)
            if waiting is not None:
                waiting.result = obj.get("output")
                self.complete(waiting, out)


def from_openai_agents(result: Any) -> list[dict[str, Any]]:
    """Calls from an OpenAI Agents SDK run (``RunResult.new_items``) or Responses API output.

    Args:
        result: a ``RunResult`` (its ``new_items``), a list of run items, a ``Response`` (its
            ``output``), or a list of Responses items.

    Returns:
        The function calls in order, with their outputs.
    """
    items = _get(result, "new_items")
    if items is None and not isinstance(result, list):
        items = _get(result, "output")
    if items is None:
        items = result
    plain: list[Any] = []
    for item in items if isinstance(items, (list, tuple)) else [items]:
        if isinstance(item, Mapping):
            plain.append(_plain(item))
            continue
        raw = getattr(item, "raw_item", None)
        if raw is None:
            plain.append(_plain(item))
            continue
        entry: dict[str, Any] = {"type": getattr(item, "type", None), "raw_item": _plain(raw)}
        if hasattr(item, "output"):
            entry["output"] = _plain(item.output)
        plain.append(entry)
    return _run(_ResponsesDialect(), plain)


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
