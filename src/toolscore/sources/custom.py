"""Toolscore's custom format: one dict per call, with the result on the call.

Shapes: ``{"calls": [...]}`` (or ``tool_calls``), a list of call dicts, a single call dict, and
JSON Lines with one call (or one such container) per line. Each call is read as Toolscore 1.10
reads it:

* tool: the first truthy of ``tool``, ``name``, ``function``; an item without one is skipped
  silently, as Toolscore does;
* args: the first truthy of ``args``, ``arguments``, ``input``, else ``{}``; a non-dict value is
  wrapped as ``{"value": x}`` (so a JSON-string ``arguments`` is *not* parsed);
* ``result``/``output``, ``timestamp``/``time``, ``duration``/``elapsed`` (falsy values fall
  through to the second key), ``cost``;
* every other key goes into ``metadata`` as it is, so ``error``, ``is_error`` and ``id`` give
  :attr:`ToolCall.is_error` and :attr:`ToolCall.error` their Toolscore meaning.

Where Toolscore crashes later, this reader decides instead: a tool name that is not a string
(a dict, a number) skips the call with an ``input``/``bad_tool_name`` error finding naming the
location; a ``timestamp``, ``duration`` or ``cost`` that is not a number is left ``None`` and
its raw value is kept in ``metadata`` under the same key.
"""

from __future__ import annotations

from typing import Any

from ..calls import Batch, Location, ToolCall
from ._base import Dialect
from ._util import input_finding
from .detect import Shape

__all__ = ["DIALECT", "CustomDialect", "sniff"]

_CONSUMED = frozenset(
    {
        "tool",
        "name",
        "function",
        "args",
        "arguments",
        "input",
        "result",
        "output",
        "timestamp",
        "time",
        "duration",
        "elapsed",
        "cost",
    }
)
_NAME_KEYS = ("tool", "name", "function")


_NUMBERS = (float, int)


def _number(value: Any, key: str, metadata: dict[str, Any]) -> float | None:
    """A number as is (``bool`` is not one); anything else is ``None``, kept in metadata."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    metadata[key] = value
    return None


class CustomDialect(Dialect):
    """Reads custom call dicts; every call carries its own result and is complete at once."""

    name = "custom"

    def item(self, obj: Any, location: Location | None, out: Batch) -> None:
        """Decode a call dict, a ``{"calls": [...]}`` container or a list of calls."""
        if isinstance(obj, dict):
            calls = obj.get("calls") or obj.get("tool_calls")
            if isinstance(calls, list):
                for call in calls:
                    self._call(call, location, out)
                return
            self._call(obj, location, out)
        elif isinstance(obj, list):
            for call in obj:
                self._call(call, location, out)

    def _call(self, d: Any, location: Location | None, out: Batch) -> None:
        if not isinstance(d, dict):
            return
        get = d.get
        name = get("tool") or get("name") or get("function")
        if not name:
            return
        if not isinstance(name, str):
            where = f"{location}: " if location is not None else ""
            out.findings.append(
                input_finding(
                    "bad_tool_name",
                    f"{where}call skipped: its tool name is a JSON {type(name).__name__}, "
                    "expected a string",
                    location,
                )
            )
            return
        args = get("args") or get("arguments") or get("input") or {}
        if not isinstance(args, dict):
            args = {"value": args}
        metadata = {key: value for key, value in d.items() if key not in _CONSUMED}
        timestamp = get("timestamp") or get("time")
        if timestamp is not None and type(timestamp) not in _NUMBERS:
            timestamp = _number(timestamp, "timestamp", metadata)
        duration = get("duration") or get("elapsed")
        if duration is not None and type(duration) not in _NUMBERS:
            duration = _number(duration, "duration", metadata)
        cost = get("cost")
        if cost is not None and type(cost) not in _NUMBERS:
            cost = _number(cost, "cost", metadata)
        call = ToolCall(
            name,
            args,
            get("result") or get("output"),
            timestamp,
            duration,
            cost,
            metadata,
            location=location,
        )
        self.new_call(call, out)


DIALECT = CustomDialect


def _is_call(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    return any(value.get(key) for key in _NAME_KEYS)


def _is_container(value: Any) -> bool:
    return isinstance(value, dict) and any(
        isinstance(value.get(key), list) and value[key] for key in ("calls", "tool_calls")
    )


def sniff(shape: Shape) -> str | None:
    """Custom calls: call dicts (a truthy ``tool``/``name``/``function``) in a list, in
    ``calls``/``tool_calls``, alone, or one per line."""
    if shape.layout == "jsonl":
        for line in shape.lines:
            if _is_call(line) or _is_container(line):
                return ""
            if isinstance(line, list) and any(_is_call(v) for v in line):
                return ""
        return None
    if shape.top == "array":
        return "item" if any(_is_call(v) for v in shape.items("item")) else None
    if shape.top == "object":
        for key in ("calls", "tool_calls"):
            if isinstance(shape.sample.get(key), list):
                return f"{key}.item"
        if _is_call(shape.sample):
            return ""
    return None
