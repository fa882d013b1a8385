"""A chunk of plain custom calls, decoded by msgspec into structs, read column by column
(:class:`CustomBlock`): no ``ToolCall`` is built unless someone asks, and the JSON report's
records are encoded by msgspec (see :mod:`toolscore.sources.custom`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import compress, repeat
from operator import attrgetter, is_not, itemgetter
from typing import Any

import msgspec

from ..calls import Location, ToolCall, error_text
from ..columns import Columns
from ..failed import FailureRules, raw_candidates
from ..records import CallRecord

_UNSET: Any = msgspec.UNSET
_RAW_NULL = msgspec.Raw(b"null")
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


def _error(raw: Any) -> Any:
    """A call's ``error`` as the failure rules read it (None where it has none): as the file
    gives it, as the item path's ``metadata`` holds it."""
    return None if raw is _UNSET else raw


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
        # the flags' and errors' candidates first (found in C: a flag or an error that is
        # truthy; UNSET is falsy, as False is), decided without their results; then the raw
        # results of the other calls holding what a result rule looks for (one joined search
        # first: usually none does), each decided by the rules with its result decoded
        positions = range(self.n)
        flags = list(map(_get_is_error, self._items))
        errors = self._raw_errors()
        found: dict[int, str] = {}
        for i in sorted({*compress(positions, errors), *compress(positions, flags)}):
            why = rules.of(flags[i], _error(errors[i]), None)
            if why is not None:
                found[i] = why
        if rules.reads_results:
            raws = list(map(_get_result, self._items))
            searched = raws
            if found:  # (their results are not searched: empty in the copy searched)
                searched = raws.copy()
                for i in found:
                    searched[i] = b""
            for i in raw_candidates(searched, rules):
                if i in found:
                    continue
                why = rules.of(flags[i], _error(errors[i]), msgspec.json.decode(raws[i]))
                if why is not None:
                    found[i] = why
            if len(found) > 1:
                return sorted(found.items())
        return list(found.items())

    def error(self, i: int) -> str | None:
        return error_text(self._items[i].error)  # (UNSET is falsy)

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
        for i in self.judged():
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
