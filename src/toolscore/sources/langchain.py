"""LangChain and LangGraph traces: agent actions, tool-call dicts and messages.

Items read, each a JSON value the decoder hands over:

* legacy agent actions ``{"tool", "tool_input", "log"}`` (``tool_call_id`` is the id);
* ``{"action", "action_input"}`` steps;
* modern tool calls ``{"name", "args", "id", "type": "tool_call"}``;
* ``intermediate_steps`` pairs ``[action, observation]``: the observation is the result;
* messages (an ``AIMessage`` dump, or an OpenAI-style dict) whose ``tool_calls`` hold LangChain
  ``{"name", "args"}`` or OpenAI ``{"function": {"name", "arguments"}}`` entries, and the
  ``ToolMessage`` (``type`` or ``role`` ``"tool"``) that answers one by ``tool_call_id``, with
  ``status: "error"`` marking a failure;
* a LangGraph state ``{"messages": [...]}`` or ``{"intermediate_steps": [...]}``, the
  ``messages_to_dict`` form ``{"type", "data"}`` and the ``dumpd`` form ``{"lc", "kwargs"}``.

``tool_input``/``action_input`` strings are decoded as JSON (not JSON: ``{"input": s}``; JSON
that is not an object: ``{}``), as Toolscore 1.10 does. Modern ``args`` are kept as they are.
"""

from __future__ import annotations

from typing import Any

from ..calls import Batch, Location, ToolCall
from ._base import Dialect
from ._util import loads_lenient, parse_arguments
from .detect import Shape

__all__ = ["DIALECT", "LangChainDialect", "sniff"]

_MESSAGE_TYPES = frozenset(
    {"ai", "human", "system", "tool", "function", "chat", "AIMessageChunk", "remove"}
)
_LC_CLASS_TYPES = {"AIMessage": "ai", "AIMessageChunk": "ai", "ToolMessage": "tool"}


def legacy_input(value: Any) -> Any:
    """``tool_input``/``action_input``: a dict as is; a JSON string decoded (not JSON:
    ``{"input": s}``); anything else ``{}``."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            decoded = loads_lenient(value)
        except ValueError:
            return {"input": value}
        return decoded if isinstance(decoded, dict) else {}
    return {}


def function_args(value: Any) -> Any:
    """OpenAI-style ``arguments``: a JSON string decoded (invalid: ``{"raw": s}``); ``None`` as
    ``{}``; anything else as is."""
    if value is None:
        return {}
    if isinstance(value, str):
        return parse_arguments(value)
    return value


def content_text(content: Any) -> Any:
    """A message's content: a string as is; a list of blocks joined (text blocks and strings)
    with newlines when it has any; otherwise the raw value."""
    if isinstance(content, list):
        texts = [
            block
            if isinstance(block, str)
            else block.get("text")
            if isinstance(block, dict) and isinstance(block.get("text"), str)
            else None
            for block in content
        ]
        kept = [t for t in texts if t is not None]
        if kept:
            return "\n".join(kept)
    return content


def _is_message_type(kind: Any) -> bool:
    return isinstance(kind, str) and kind in _MESSAGE_TYPES


def _is_observation(value: Any) -> bool:
    """True unless ``value`` looks like another action (so ``[action, action]`` stays two)."""
    if not isinstance(value, dict):
        return True
    return not any(key in value for key in ("tool", "action", "name", "tool_calls"))


def _unwrap(obj: dict[str, Any]) -> dict[str, Any]:
    """The message inside the ``dumpd`` (``lc``/``kwargs``) or ``messages_to_dict`` forms."""
    kwargs = obj.get("kwargs")
    if "lc" in obj and isinstance(kwargs, dict):
        ident = obj.get("id")
        last = ident[-1] if isinstance(ident, list) and ident else None
        kind = _LC_CLASS_TYPES.get(last) if isinstance(last, str) else None
        return {**kwargs, "type": kind} if kind and "type" not in kwargs else kwargs
    data = obj.get("data")
    if isinstance(data, dict) and _is_message_type(obj.get("type")) and len(obj) <= 2:
        return {**data, "type": obj["type"]} if "type" not in data else data
    return obj


class LangChainDialect(Dialect):
    """Reads LangChain agent actions, tool calls and messages into calls."""

    name = "langchain"

    def item(self, obj: Any, location: Location | None, out: Batch) -> None:
        """Decode one action, step, tool call, message, state, or a list of them."""
        if isinstance(obj, list):
            if len(obj) == 2 and isinstance(obj[0], dict) and _is_observation(obj[1]):
                first = obj[0]
                if "tool" in first or "action" in first:
                    self._step(first, obj[1], location, out)
                    return
            for element in obj:
                self.item(element, location, out)
            return
        if not isinstance(obj, dict):
            return
        obj = _unwrap(obj)
        tool_calls = obj.get("tool_calls")
        if isinstance(tool_calls, list) and tool_calls:
            for entry in tool_calls:
                if isinstance(entry, dict):
                    self._tool_call(entry, location, out)
            return
        kind = obj.get("type")
        if kind == "tool" or obj.get("role") == "tool":
            self._tool_message(obj, out)
            return
        if obj.get("tool"):
            self._step(obj, None, location, out, observed=False)
            return
        if obj.get("action") and isinstance(obj.get("action"), str):
            self._step(obj, None, location, out, observed=False)
            return
        name = obj.get("name")
        if name and isinstance(name, str) and not _is_message_type(kind) and "role" not in obj:
            self._modern(obj, location, out)
            return
        for key in ("messages", "intermediate_steps"):
            inner = obj.get(key)
            if isinstance(inner, list):
                for element in inner:
                    self.item(element, location, out)

    def _step(
        self,
        action: dict[str, Any],
        observation: Any,
        location: Location | None,
        out: Batch,
        *,
        observed: bool = True,
    ) -> None:
        action = _unwrap(action)
        metadata: dict[str, Any] = {}
        if action.get("tool"):
            name = action["tool"]
            raw = action.get("tool_input", action.get("args"))
            metadata["format"] = "langchain_legacy"
            if "log" in action:
                metadata["log"] = action["log"]
            if action.get("tool_call_id") is not None:
                metadata["id"] = action["tool_call_id"]
        elif action.get("action"):
            name = action["action"]
            raw = action.get("action_input")
            metadata["format"] = "langchain_action"
        else:
            return
        if not isinstance(name, str):
            return
        call = ToolCall(tool=name, args=legacy_input(raw), metadata=metadata, location=location)
        if observed:
            call.result = observation
        self.new_call(call, out)

    def _modern(self, obj: dict[str, Any], location: Location | None, out: Batch) -> None:
        metadata: dict[str, Any] = {"format": "langchain_modern"}
        call_id = obj.get("id")
        if call_id is not None:
            metadata["id"] = call_id
        if "type" in obj:
            metadata["type"] = obj["type"]
        call = ToolCall(tool=obj["name"], args=obj.get("args"), metadata=metadata)
        call.location = location
        self._emit(call, call_id, out)

    def _tool_call(self, entry: dict[str, Any], location: Location | None, out: Batch) -> None:
        function = entry.get("function")
        if isinstance(function, dict):
            name = function.get("name")
            args = function_args(function.get("arguments"))
            fmt = "tool_calls"
        else:
            name = entry.get("name")
            args = entry.get("args")
            if isinstance(args, str):
                args = function_args(args)
            fmt = "langchain_modern"
        if not name or not isinstance(name, str):
            return
        metadata: dict[str, Any] = {"format": fmt}
        call_id = entry.get("id")
        if call_id is not None:
            metadata["id"] = call_id
        call = ToolCall(tool=name, args=args, metadata=metadata, location=location)
        self._emit(call, call_id, out)

    def _emit(self, call: ToolCall, call_id: Any, out: Batch) -> None:
        if not isinstance(call_id, (str, int, float)):
            self.new_call(call, out)
            return
        self.new_call(call, out, complete=False)
        previous = self.pending.pop(call_id, None)
        if previous is not None:
            self.complete(previous, out)
        self.pending[call_id] = call

    def _tool_message(self, obj: dict[str, Any], out: Batch) -> None:
        call_id = obj.get("tool_call_id")
        if not isinstance(call_id, (str, int, float)):
            return
        call = self.pending.pop(call_id, None)
        if call is None:
            return
        call.result = content_text(obj.get("content"))
        failed = obj.get("status") == "error"
        call.metadata["is_error"] = failed
        if failed:
            text = call.result
            call.metadata["error"] = text if isinstance(text, str) else str(text)
        self.complete(call, out)


DIALECT = LangChainDialect


def _is_langchain(value: Any) -> bool:
    """Clearly LangChain: an agent action or step, a ``tool_call`` dict, a LangChain message
    (``type`` ``ai``/``tool``, not an OpenAI ``role``), or a serialized message."""
    if isinstance(value, list):
        return len(value) == 2 and isinstance(value[0], dict) and _is_langchain(value[0])
    if not isinstance(value, dict):
        return False
    if "tool_input" in value or "action_input" in value:
        return True
    if value.get("type") == "tool_call" and "name" in value:
        return True
    if "lc" in value and isinstance(value.get("kwargs"), dict):
        return True
    if "role" in value:
        return False
    kind = value.get("type")
    if kind == "ai" and ("tool_calls" in value or "additional_kwargs" in value):
        return True
    if kind == "tool" and "tool_call_id" in value:
        return True
    return isinstance(value.get("data"), dict) and _is_message_type(kind) and len(value) <= 2


def sniff(shape: Shape) -> str | None:
    """``item`` for an array of actions, steps, tool calls or messages; ``messages.item`` and
    ``intermediate_steps.item`` for a state; ``""`` for one of them (or one per line)."""
    if shape.layout == "jsonl":
        return "" if any(_is_langchain(v) for v in shape.lines[:50]) else None
    sample = shape.sample
    if isinstance(sample, list):
        return "item" if any(_is_langchain(v) for v in sample[:50]) else None
    if not isinstance(sample, dict):
        return None
    for key in ("intermediate_steps", "messages"):
        inner = sample.get(key)
        if isinstance(inner, list) and any(_is_langchain(v) for v in inner[:50]):
            return f"{key}.item"
    return "" if _is_langchain(sample) else None
