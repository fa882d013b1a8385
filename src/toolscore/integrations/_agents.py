"""Helpers for Pydantic AI and the OpenAI Agents SDK (Responses items), which have no file
format of their own: a small dialect each, here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from ..calls import Batch, Location, ToolCall
from ..sources._base import Dialect
from ._convert import _get, _plain, _run


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
