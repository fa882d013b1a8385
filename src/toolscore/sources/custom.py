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

import re
from collections.abc import Callable, Iterator, Sequence
from itertools import compress, repeat
from operator import attrgetter, is_not, itemgetter
from typing import Any

import msgspec

from ..calls import Batch, Location, ToolCall
from ..columns import Columns
from ..failed import FailureRules, raw_candidates
from ..limits import MARGIN, MAX_DEPTH, bounded_depth, decode_limit_exact
from ..records import CallRecord
from ._base import Dialect
from ._depth import DepthGuard
from ._util import located_finding
from .detect import Shape

__all__ = ["DIALECT", "CustomBlock", "CustomDialect", "sniff"]

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


# -- whole chunks at once -------------------------------------------------------------------------
#
# A chunk of plain calls (JSON Lines, or a run of a JSON array) is decoded by msgspec straight
# into small structs, in C: a call costs no Python bytecode to decode, and its result is kept
# as raw JSON bytes (``msgspec.Raw``), which the JSON report writes back as they are. "Plain"
# means: a dict whose keys are ``tool`` (a non-empty string), ``args`` (a dict), ``result``,
# ``timestamp``/``duration``/``cost`` (numbers or null), ``is_error``, ``error``, and any other
# key that goes to ``metadata`` unread. Anything else (a key Toolscore reads in place of
# another, such as ``name``, ``arguments`` or ``output``; a number where a string is due; NaN)
# fails the whole chunk, which is then read item by item as before. So both paths give the
# same calls.

Buffer = bytes | memoryview
"""What msgspec decodes: bytes or a view of them."""
_UNSET: Any = msgspec.UNSET
_RAW_NULL = msgspec.Raw(b"null")
_Number = int | float | None
_BASE_FIELDS: list[tuple[str, Any, Any]] = [
    ("tool", str, msgspec.NODEFAULT),
    ("args", dict[str, Any], {}),
    ("result", msgspec.Raw, _RAW_NULL),
    ("timestamp", _Number, None),
    ("duration", _Number, None),
    ("cost", _Number, None),
    ("is_error", Any, _UNSET),
    ("error", Any, _UNSET),
]
_ALIASES = frozenset(_CONSUMED | {"calls", "tool_calls"})
"""Keys that change how a call is read: their presence sends the chunk down the item path."""
_MAX_EXTRAS = 32
_UNKNOWN_FIELD = re.compile(r"unknown field `(.*)` - at `\$\[\d+\]`$", re.DOTALL)
_GIVE_UP_AFTER = 3
"""Consecutive chunks that fail the fast path before it is no longer tried."""


def _struct(extras: tuple[str, ...]) -> type[Any]:
    """The struct of a plain call that may also carry the keys ``extras``."""
    fields = list(_BASE_FIELDS) + [(f"x{i}", Any, _UNSET) for i in range(len(extras))]
    cls = msgspec.defstruct(
        "_PlainCall",
        fields,
        rename={f"x{i}": key for i, key in enumerate(extras)},
        forbid_unknown_fields=True,
        gc=False,
    )
    return cls


_DECODERS: dict[tuple[str, ...], tuple[msgspec.json.Decoder[Any], msgspec.json.Decoder[Any]]] = {}
_MAX_DECODERS = 256


def _decoders(
    extras: tuple[str, ...],
) -> tuple[msgspec.json.Decoder[Any], msgspec.json.Decoder[Any]]:
    """The array and line decoders for ``extras``, made once per process: a dataset reads
    thousands of small traces with the same keys, and building a struct costs ~0.1 ms."""
    found = _DECODERS.get(extras)
    if found is None:
        cls = _struct(extras)
        found = (msgspec.json.Decoder(list[cls]), msgspec.json.Decoder(cls))  # type: ignore[valid-type]
        if len(_DECODERS) >= _MAX_DECODERS:
            _DECODERS.clear()
        _DECODERS[extras] = found
    return found


class _FastReader:
    """Decodes chunks into :class:`CustomBlock` objects, learning the file's extra keys."""

    def __init__(self) -> None:
        self.extras: tuple[str, ...] = ()
        self._shape(())
        self._failures = 0

    def _shape(self, extras: tuple[str, ...]) -> None:
        self.extras = extras
        self._array, self._line = _decoders(extras)

    def decode(
        self,
        pieces: Sequence[Buffer],
        lines: bool,
        count: int | None,
        start: int,
        source: str,
        first_line: int | None,
        levels: int = MAX_DEPTH,
    ) -> CustomBlock | None:
        """Decode ``pieces`` (JSON arrays, or JSON Lines when ``lines``) into one block;
        None when they do not decode as plain calls, or nest deeper than ``levels``."""
        if self._failures >= _GIVE_UP_AFTER:
            return None
        if not decode_limit_exact() and any(
            DepthGuard(levels).feed(bytes(piece)) is not None for piece in pieces
        ):
            return None  # too deep: the item path says where
        while True:
            try:
                items: list[Any] | None = []
                decode = self._line.decode_lines if lines else self._array.decode
                # A margin below the limit (msgspec's count can be off by a few levels; a
                # value this deep is rare): the item path the caller falls back to holds
                # the limit exactly.
                with bounded_depth(levels - MARGIN):
                    for piece in pieces:
                        items += decode(piece)  # type: ignore[operator]
            except RecursionError:  # the item path says which line or byte
                items = None
            except msgspec.ValidationError as exc:
                if self._learn(str(exc)):
                    continue
                items = None
            except msgspec.DecodeError:
                items = None
            break
        if items is None or (count is not None and len(items) != count):
            self._failures += 1  # (JSON Lines: a blank line is skipped, so one item less)
            return None
        block = CustomBlock(items, self.extras, start, source, first_line)
        if "" in block.tools:  # an empty name skips the call: the item path does that
            self._failures += 1
            return None
        self._failures = 0
        return block

    def _learn(self, message: str) -> bool:
        """Add the unknown key ``message`` names to the extras; False when it cannot be."""
        m = _UNKNOWN_FIELD.search(message)
        if m is None or len(self.extras) >= _MAX_EXTRAS:
            return False
        key = m.group(1)
        if key in _ALIASES or key in self.extras:
            return False
        self._shape((*self.extras, key))
        return True


_get_tool = attrgetter("tool")
_get_args = attrgetter("args")
_get_result = attrgetter("result")
_get_duration = attrgetter("duration")
_get_cost = attrgetter("cost")
_get_is_error = attrgetter("is_error")
_get_error = attrgetter("error")
_HEAD = itemgetter(slice(0, 2))
_VIEW: Any = memoryview
_FALSY_HEADS = frozenset(
    [b"nu", b"fa", b"0", b"0.", b"0e", b"0E", b"-0", b'""', b"[]", b"{}"]
    + [bracket + space for bracket in (b"[", b"{") for space in (b" ", b"\t", b"\r", b"\n")]
)
"""The first two bytes of every falsy JSON value (and of a few truthy ones, decoded to see)."""


_encode = msgspec.json.Encoder().encode
ONE_PER_LINE = 64
"""A batch of fewer calls writes one record a line in the JSON report; a larger one writes
its records on one line (a JSON array's items, in one C call: 0.4 us a call less)."""


class CustomBlock(Columns):
    """Plain custom calls decoded from one chunk, read column by column.

    ``ToolCall`` objects are built only by :meth:`call` and :meth:`calls`; the checks read the
    columns, and the JSON report's records are encoded by msgspec (:meth:`write_records`).

    Args:
        items: the decoded structs.
        extras: the names of the structs' extra fields (``x0``, ``x1``...), in order.
        start: the trace index of the first call.
        source: the file name, for locations.
        first_line: the line of the first call (JSON Lines, one call per line), or None.
    """

    __slots__ = (
        "_args",
        "_durations_raw",
        "_errors_raw",
        "_extras",
        "_items",
        "_location",
        "_tools",
        "first_line",
        "source",
        "start",
    )

    def __init__(
        self,
        items: list[Any],
        extras: tuple[str, ...],
        start: int,
        source: str,
        first_line: int | None,
    ) -> None:
        super().__init__(len(items), "strict")
        self._items = items
        self._extras = extras
        self.start = start
        self.source = source
        self.first_line = first_line
        self._tools: list[str] = list(map(_get_tool, items))
        self._args: list[Any] = list(map(_get_args, items))
        self._location = Location(source)
        self._errors_raw: list[Any] | None = None
        self._durations_raw: list[Any] | None = None

    @property
    def tools(self) -> list[str]:
        return self._tools

    @property
    def args(self) -> list[Any]:
        return self._args

    def index(self, i: int) -> int:
        return self.start + i

    def location(self, i: int) -> Location:
        if self.first_line is None:
            return self._location
        return Location(self.source, self.first_line + i)

    def _find_failures(self, rules: FailureRules) -> list[tuple[int, str]]:
        # the candidates found in C: a flag or an error that is truthy (UNSET is falsy, as
        # False is), and a raw result holding what a result rule looks for (a joined search
        # first: usually none does); each candidate is then decided by the rules
        positions = range(self.n)
        flags = list(map(_get_is_error, self._items))
        errors = self._raw_errors()
        maybe = set(compress(positions, errors))
        maybe.update(compress(positions, flags))
        raws: list[Any] = []
        if rules.reads_results:
            raws = list(map(_get_result, self._items))
            maybe.update(raw_candidates(raws, rules))
        out: list[tuple[int, str]] = []
        for i in sorted(maybe):
            error = errors[i]
            result = msgspec.json.decode(raws[i]) if raws else None
            why = rules.of(flags[i], None if error is _UNSET else error, result)
            if why is not None:
                out.append((i, why))
        return out

    def error(self, i: int) -> str | None:
        err = self._items[i].error
        if err is _UNSET or err is None or isinstance(err, bool):
            return None
        return err if isinstance(err, str) else str(err)

    def durations(self) -> list[float]:
        return list(filter(None, self._raw_durations()))

    def _raw_errors(self) -> list[Any]:
        """Every call's ``error`` as decoded (``UNSET`` where it has none): read once for
        the failed calls and the records."""
        if self._errors_raw is None:
            self._errors_raw = list(map(_get_error, self._items))
        return self._errors_raw

    def _raw_durations(self) -> list[Any]:
        """Every call's ``duration`` as decoded: read once for the metrics and the records."""
        if self._durations_raw is None:
            self._durations_raw = list(map(_get_duration, self._items))
        return self._durations_raw

    def costs(self) -> list[tuple[str, float]]:
        costs = list(map(_get_cost, self._items))
        if costs.count(None) == len(costs):
            return []
        return [
            (tool, cost) for tool, cost in zip(self._tools, costs, strict=True) if cost is not None
        ]

    def _results(self) -> list[Any]:
        """The raw results, with Toolscore's ``result or output`` applied: a falsy result
        (``null``, ``""``, ``0``, ``[]``, ``{}``, ``false``) is None."""
        raws: list[Any] = list(map(_get_result, self._items))
        heads = map(bytes, map(_HEAD, map(_VIEW, raws)))
        for i in list(compress(range(len(raws)), map(_FALSY_HEADS.__contains__, heads))):
            raw = raws[i]
            if raw is _RAW_NULL or not msgspec.json.decode(raw):
                raws[i] = None
        return raws

    def result_texts(self) -> list[Any]:
        """The raw JSON of every call's result (``null`` where there is none), as decoded:
        bytes-like objects, not copied."""
        return list(map(_get_result, self._items))

    def _records(self) -> list[Any]:
        n = self.n
        flags = [False] * n
        errors: list[Any] = [None] * n
        for i in self.failed():
            flags[i] = True
        raw_errors = self._raw_errors()
        if raw_errors.count(_UNSET) != n:
            for i in list(compress(range(n), map(is_not, raw_errors, repeat(_UNSET)))):
                if not isinstance(raw_errors[i], bool):
                    errors[i] = raw_errors[i]
        durations: list[Any] = self._raw_durations()
        if 0 in durations:
            durations = [d or None for d in durations]
        return list(
            map(
                CallRecord,
                self._tools,
                self._args,
                self._results(),
                flags,
                errors,
                durations,
                map(_get_cost, self._items),
            )
        )

    def _compact(self, records: list[Any]) -> None:
        """A result laid out over several lines (in a JSON document), made one line."""
        for record in records:
            if record.result is not None:
                record.result = msgspec.Raw(msgspec.json.format(record.result, indent=-1))

    def records(self) -> list[bytes]:
        records = self._records()
        lines = list(map(_encode, records))
        if self.first_line is None and any(b"\n" in line for line in lines):
            self._compact(records)
            lines = list(map(_encode, records))
        return lines

    def write_records(self, write: Callable[[bytes | memoryview], object], separator: bytes) -> int:
        """Write the records in one C call: a JSON array of them, written without its
        brackets, so the records of a large batch share one line (one per line below
        :data:`ONE_PER_LINE` records)."""
        if self.n < ONE_PER_LINE:
            return super().write_records(write, separator)
        records = self._records()
        text = _encode(records)
        if self.first_line is None and text.find(b"\n") >= 0:
            self._compact(records)
            text = _encode(records)
        write(memoryview(text)[1:-1])
        write(separator)
        return self.n

    def call(self, i: int) -> ToolCall:
        """The call at position ``i`` as a :class:`ToolCall`."""
        item = self._items[i]
        metadata: dict[str, Any] = {}
        if item.is_error is not _UNSET:
            metadata["is_error"] = item.is_error
        if item.error is not _UNSET:
            metadata["error"] = item.error
        for j, key in enumerate(self._extras):
            value = getattr(item, f"x{j}")
            if value is not _UNSET:
                metadata[key] = value
        result = msgspec.json.decode(item.result) or None
        return ToolCall(
            item.tool,
            item.args,
            result,
            item.timestamp or None,
            item.duration or None,
            item.cost,
            metadata,
            self.start + i,
            self.location(i),
        )

    def calls(self) -> list[ToolCall]:
        return [self.call(i) for i in range(self.n)]

    def trace_ids(self, keys: Sequence[str]) -> Iterator[tuple[str, Any, Location | None]]:
        """``(key, id, location)`` of the first call and of the first call whose id differs,
        for the first of ``keys`` these calls carry (nothing when they carry none)."""
        key = next((k for k in keys if k in self._extras), None)
        if key is None or not self.n:
            return
        get = attrgetter(f"x{self._extras.index(key)}")
        values = list(map(get, self._items))
        first = values[0]
        if first is not _UNSET:
            yield key, first, self.location(0)
        if values.count(first) != len(values):
            i = next(i for i, v in enumerate(values) if v != first)
            if values[i] is not _UNSET:
                yield key, values[i], self.location(i)
