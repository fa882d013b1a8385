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

Where things are: the dialect (the item path) and the sniffer here; a plain call's struct, its
decoders and the reader of whole chunks in ``_custom_plain``; the decoded block, read column
by column, in ``_custom_block``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..calls import Batch, Location, ToolCall
from ._base import Dialect
from ._custom_block import ONE_PER_LINE as ONE_PER_LINE
from ._custom_block import CustomBlock
from ._custom_plain import _CONSUMED, _FastReader
from ._custom_plain import Buffer as Buffer
from ._util import located_finding
from .detect import Shape

__all__ = ["DIALECT", "CustomBlock", "CustomDialect", "sniff"]

_NAME_KEYS = ("tool", "name", "function")


_NUMBERS = (float, int)


def _number(value: Any, key: str, metadata: dict[str, Any]) -> float | None:
    """A number as is (``bool`` is not one); anything else is ``None``, kept in metadata."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    metadata[key] = value
    return None


class CustomDialect(Dialect):
    """Reads custom call dicts; every call carries its own result and is complete at once.

    Besides :meth:`item` (one decoded JSON value at a time), the dialect reads whole runs of
    plain calls at once with :meth:`block` (see :class:`CustomBlock`).
    """

    name = "custom"
    reads_blocks = True

    def __init__(self, source: str = "<memory>") -> None:
        super().__init__(source)
        self._fast = _FastReader()

    def block(self, text: bytes, count: int | None, first_line: int | None) -> CustomBlock | None:
        """Decode ``text``, a JSON array of ``count`` items (or any number when None), as
        plain custom calls in one go.

        Returns:
            The calls, numbered from :attr:`next_index`, or None when some item is not a plain
            call (the caller then reads the items one by one, with Toolscore's rules).
        """
        return self._numbered(
            self._fast.decode(
                [text], False, count, self.next_index, self.source, first_line, self.block_levels
            )
        )

    def block_lines(
        self, pieces: Sequence[Buffer], count: int, first_line: int
    ) -> CustomBlock | None:
        """Decode ``count`` JSON lines, given as ``pieces`` of whole lines, as plain custom
        calls in one go (msgspec's ``decode_lines``: no copy of the chunk)."""
        return self._numbered(
            self._fast.decode(pieces, True, count, self.next_index, self.source, first_line)
        )

    @property
    def extra_keys(self) -> tuple[str, ...]:
        """The keys beyond a plain call's that the blocks decoded so far carried (learned from
        msgspec's refusals, a decode each)."""
        return self._fast.extras

    def expect_keys(self, keys: tuple[str, ...]) -> None:
        """Decode blocks with ``keys`` known from the start: those another trace of the same
        file taught (a dataset's traces share their keys; learning them again costs each
        small trace a failed decode per key)."""
        if keys != self._fast.extras:
            self._fast._shape(keys)

    def _numbered(self, block: CustomBlock | None) -> CustomBlock | None:
        if block is not None:
            self.next_index += block.n
        return block

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
            if not obj:
                self._not_a_call(obj, location, out)
        else:
            self._not_a_call(obj, location, out)

    def _not_a_call(self, obj: Any, location: Location | None, out: Batch) -> None:
        """A JSON Lines line that holds no call (``42``, ``null``, ``{"args": {}}``,
        ``{"tool": ""}``): an input problem on its line. In an array it is skipped silently,
        as Toolscore 1.10 does."""
        if not self.one_item_per_line:
            return
        if isinstance(obj, dict):
            if any(isinstance(obj.get(key), list) for key in ("calls", "tool_calls")):
                return  # an empty container: no call, nothing wrong
            named = [key for key in _NAME_KEYS if key in obj]
            if not named:
                what = 'an object without a "tool" name'
            else:
                what = f'an object whose "{named[0]}" is {_json_text(obj[named[0]])}'
        else:
            what = f'a JSON {_json_kind(obj)} (expected an object with a "tool" name)'
        problem = f"not a call: {what}; skipped"
        out.findings.append(located_finding("not_a_call", problem, location))

    def _call(self, d: Any, location: Location | None, out: Batch) -> None:
        if not isinstance(d, dict):
            self._not_a_call(d, location, out)
            return
        get = d.get
        name = get("tool") or get("name") or get("function")
        if not name:
            self._not_a_call(d, location, out)
            return
        if not isinstance(name, str):
            out.findings.append(
                located_finding(
                    "bad_tool_name",
                    "call skipped: its tool name is a JSON {type(name).__name__}, "
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


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _json_text(value: Any) -> str:
    """A falsy name as the problem names it: ``null``, an empty string, ``false``, ``0``."""
    if value is None:
        return "null"
    if value == "":
        return "an empty string"
    if isinstance(value, (bool, int, float)):
        return f"{str(value).lower()}"
    return f"an empty {_json_kind(value)}"


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
