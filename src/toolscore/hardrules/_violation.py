"""A hard rule's violation, and what every state keeps alike: where its pending calls were
read (:data:`Places`), the violations it keeps (the first
:data:`~toolscore.capped.MAX_RECORDS` of the trace), and how it pickles them (as columns)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any, TypeVar, cast

from ..calls import Location
from ..capped import MAX_RECORDS


@dataclass(frozen=True, slots=True, init=False)
class Violation:
    """A hard rule that failed, at a call (``index``) or at the end of the trace (None)."""

    rule: str
    """The rule's id (``order[0]``, ``allow``, ``schema:search``...)."""
    kind: str
    """``tool_not_allowed``, ``order_violation``, ``too_many_calls``, ``too_few_calls``,
    ``step_budget_exceeded``, ``schema_violation``, ``data_flow``, ``match_failed``."""
    index: int | None
    tool: str | None
    detail: str
    """What happened, after ``call N TOOL`` (safe to print: no argument values)."""
    path: str | None = None
    """The failing argument's path (schemas)."""
    source: tuple[int, str, str] | None = None
    """Data flow: the call that made the data private, ``(index, tool, what it did)``."""
    where: Location | None = field(default=None, compare=False)
    """Where the call was read (for the finding; not part of what the state says)."""

    def __init__(
        self,
        rule: str,
        kind: str,
        index: int | None,
        tool: str | None,
        detail: str,
        path: str | None = None,
        source: tuple[int, str, str] | None = None,
        where: Location | None = None,
    ) -> None:
        # the slots' own setters (frozen: no __setattr__), as Finding does: a data-flow rule
        # can make a violation of every other call
        _SET_V_RULE(self, rule)
        _SET_V_KIND(self, kind)
        _SET_V_INDEX(self, index)
        _SET_V_TOOL(self, tool)
        _SET_V_DETAIL(self, detail)
        _SET_V_PATH(self, path)
        _SET_V_SOURCE(self, source)
        _SET_V_WHERE(self, where)

    def moved(self, calls: int, lines: int = 0, source: Source | None = None) -> Violation:
        """The same violation ``calls`` calls and ``lines`` lines further on, made once;
        ``source``: the data-flow source it names instead of its own (already moved)."""
        index = self.index
        if index is None or not (calls or lines or source):
            return self
        if source is None:
            source = self.source
            if source is not None and calls:
                source = (source[0] + calls, source[1], source[2])
        where = _moved_line(self.where, lines) if lines else self.where
        return Violation(
            self.rule, self.kind, index + calls, self.tool, self.detail, self.path, source, where
        )

    def but(self, **changes: Any) -> Violation:
        """The same violation with ``changes`` (``dataclasses.replace``, five times faster)."""
        fields: dict[str, Any] = {
            "rule": self.rule, "kind": self.kind, "index": self.index, "tool": self.tool,
            "detail": self.detail, "path": self.path, "source": self.source, "where": self.where,
        }  # fmt: skip
        fields.update(changes)
        return Violation(**fields)

    def text(self) -> str:
        """What happened, after ``call N TOOL`` (a data-flow violation names its source)."""
        if self.source is None:
            return self.detail
        index, tool, why = self.source
        return f"{self.detail} after call {index + 1} {tool} {why}"


(
    _SET_V_RULE, _SET_V_KIND, _SET_V_INDEX, _SET_V_TOOL, _SET_V_DETAIL, _SET_V_PATH,
    _SET_V_SOURCE, _SET_V_WHERE,
) = (
    getattr(Violation, name).__set__
    for name in ("rule", "kind", "index", "tool", "detail", "path", "source", "where")
)  # fmt: skip


Places = tuple[tuple[int, Location | None], ...]
"""Where the calls a state keeps pending were read, ``(index, location)``: what a finding
found at a merge shows. Never part of a state's equality (a part numbers its lines from 1)."""


def _moved_line(loc: Location | None, lines: int) -> Location | None:
    if loc is None or loc.line is None or not lines:
        return loc
    return Location(loc.source, loc.line + lines, loc.offset)


def _relocated_violations(violations: tuple[Violation, ...], lines: int) -> tuple[Violation, ...]:
    return tuple(v.but(where=_moved_line(v.where, lines)) for v in violations)


_PACKED = 64
"""From this many violations or places on, a state pickles them as columns."""
_VIOLATION_FIELDS = tuple(
    map(attrgetter, ("rule", "kind", "index", "tool", "detail", "path", "source", "where"))
)
_LOCATION_FIELDS = tuple(map(attrgetter, ("source", "line", "offset")))


def _pack_locations(locations: list[Any]) -> tuple[list[Any], ...] | None:
    if None in locations:
        return None
    return tuple(list(map(get, locations)) for get in _LOCATION_FIELDS)


class _Packed:
    """A state's violations or places as columns, for pickling: a later part of the 1 GB
    benchmark trace sends some 30,000 data-flow violations to the main process, and
    pickled one by one each violation and its location went through the dataclasses'
    ``__getstate__``/``__setstate__`` (Python code, twice an item), with a memo entry
    each; as columns they are lists, rebuilt with ``map``."""

    __slots__ = ("columns", "kind", "where")

    def __init__(self, kind: str, columns: tuple[list[Any], ...], where: Any) -> None:
        self.kind = kind
        self.columns = columns
        self.where = where

    def __reduce__(self) -> tuple[Any, ...]:
        return (_Packed, (self.kind, self.columns, self.where))

    @staticmethod
    def violations(items: tuple[Violation, ...]) -> Any:
        if len(items) < _PACKED:
            return items
        columns = tuple(list(map(get, items)) for get in _VIOLATION_FIELDS)
        where = _pack_locations(columns[-1])
        if where is None:
            return items
        return _Packed("violations", columns[:-1], where)

    @staticmethod
    def places(items: Places) -> Any:
        if len(items) < _PACKED:
            return items
        indices = [i for i, _ in items]
        where = _pack_locations([loc for _, loc in items])
        if where is None:
            return items
        return _Packed("places", (indices,), where)

    def unpacked(self) -> Any:
        where = list(map(Location, *self.where))
        if self.kind == "places":
            return tuple(zip(self.columns[0], where, strict=True))
        return tuple(map(Violation, *self.columns, where))


def _packed_state(state: dict[str, Any]) -> dict[str, Any]:
    out = dict(state)
    out["violations"] = _Packed.violations(state["violations"])
    out["places"] = _Packed.places(state["places"])
    return out


def _unpacked_state(obj: Any, state: dict[str, Any]) -> None:
    for name in ("violations", "places"):
        value = state[name]
        if isinstance(value, _Packed):
            state[name] = value.unpacked()
    obj.__dict__.update(state)


_S = TypeVar("_S", bound="KeptStretch")


class KeptStretch:
    """What the in-order rules' state and the data-flow state share: the violations kept
    (up to the cap, the rest counted in ``omitted``), pickled packed, and lines moved
    lazily (``moved_lines``: :meth:`relocated` adds to it; each state's ``settled``
    applies it). Their dataclasses declare the fields."""

    violations: tuple[Violation, ...]
    omitted: int
    moved_lines: int

    @property
    def violation_count(self) -> int:
        """Every violation found, counted."""
        return len(self.violations) + self.omitted

    def __getstate__(self) -> dict[str, Any]:
        return _packed_state(self.__dict__)

    def __setstate__(self, state: dict[str, Any]) -> None:
        _unpacked_state(self, state)

    def relocated(self: _S, lines: int) -> _S:
        """The same state with its calls' lines ``lines`` further on (a part read alone)."""
        if not lines:
            return self
        moved: _S = replace(cast(Any, self), moved_lines=self.moved_lines + lines)
        return moved


def _keep(kept: list[Violation], new: list[Violation], origin: bool) -> int:
    """Add ``new`` (in call order, after ``kept``) to ``kept``: all of them in a stretch that
    does not start the trace (the merge reports them), the first
    :data:`~toolscore.capped.MAX_RECORDS` of the trace otherwise. Returns how many were left
    out."""
    if not origin:
        kept.extend(new)
        return 0
    room = max(MAX_RECORDS - len(kept), 0)
    if len(new) <= room:
        kept.extend(new)
        return 0
    kept.extend(new[:room])
    return len(new) - room


def _places(places: Places, calls: int, lines: int) -> dict[int, Location | None]:
    """``places`` as a dict, ``calls`` calls and ``lines`` lines further on."""
    if not places:
        return {}
    if not lines:
        return {i + calls: loc for i, loc in places}
    return {i + calls: _moved_line(loc, lines) for i, loc in places}


def _by_index(v: Violation) -> tuple[int, str]:
    """Call order; at one call, by rule id (the order every way of reading gives)."""
    return (v.index if v.index is not None else 1 << 62, v.rule)


Source = tuple[int, str, str]
"""A data-flow source: ``(index, tool, what it did)``."""
