"""The hard rules' states: what a stretch of a trace (a batch, a part read by another
process, the whole trace) leaves behind, and how two consecutive stretches merge.

Every rule but the allowlist and the schemas looks back: "at most once" needs the calls
before, "A before B" whether A came earlier, a data-flow rule whether a source came earlier.
A stretch that does not start the trace cannot decide those on its own, so its state keeps
what the earlier stretch will decide them with, bounded by the rules:

- a count rule: the calls counted, and the first ``max + 1`` calls to its tool (their
  indices), so the merge finds the call that went past ``max``;
- an order rule: whether ``before`` was called, and the first call to ``after`` with no
  ``before`` ahead of it in the stretch;
- a data-flow rule: its first source, and the sink calls ahead of it (at most
  :data:`PENDING_SINKS`).

A state whose stretch starts the trace (``origin``) has nothing pending: merging a stretch
into it turns what the later stretch kept into violations, which the merge returns. Merging
is associative, so a trace read whole, a batch at a time, or in parts by other processes and
merged in order gives the same violations (tests hold this with hypothesis).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any

from ..calls import Location
from ..capped import MAX_RECORDS
from .matching import MatchState
from .runs import Runs

__all__ = [
    "IN_PLACES",
    "PENDING_SINKS",
    "FlowRun",
    "FlowState",
    "SeqRun",
    "SeqState",
    "Violation",
    "head_lines",
]

PENDING_SINKS = 10_000
"""The sink calls a stretch that does not start the trace keeps per data-flow rule, waiting
for the earlier stretch to say whether a source came before them; past that, a part read by
another process reports the first 10,000 only."""


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


@dataclass(frozen=True)
class SeqState:
    """The rules read from new calls in order: counts, order, the allowlist, the schemas
    and the match modes (see the module docstring)."""

    origin: bool
    calls: int
    counts: tuple[int, ...]
    """Per count rule: the calls to its tool (every call for a step budget)."""
    heads: tuple[Runs, ...]
    """Per count rule with a ``max``: the indices of calls to its tool (of every call, for a
    budget), the k-th at position k. A stretch that is not the origin keeps its first ``max
    + 1``; a batch read into an origin state keeps the first calls up to the one that goes
    past ``max`` (none when it does not). Runs of consecutive indices
    (:class:`~toolscore.hardrules.runs.Runs`): a budget of 100,000,000 calls keeps every
    call of a part, and tuples with a location each took 250 bytes a call, arrays 16."""
    seen: tuple[bool, ...]
    """Per order rule: ``before`` was called."""
    first_after: tuple[int | None, ...]
    """Per order rule: the first call to ``after`` with no ``before`` ahead of it (a
    violation in an origin state, pending otherwise)."""
    violations: tuple[Violation, ...] = ()
    """The violations found (the first :data:`~toolscore.capped.MAX_RECORDS` of the trace in
    a state that starts it; every one in a later stretch's, which the merge reports)."""
    match: MatchState | None = None
    places: Places = field(default=(), compare=False)
    omitted: int = 0
    """Violations found past the ones kept (counted, not kept)."""
    head_lines: tuple[Runs, ...] = field(default=(), compare=False)
    """Per count rule, where each head call was read: its line in :attr:`source` (``-1``: no
    location; ``-2``: in :attr:`places`)."""
    source: str | None = field(default=None, compare=False)
    """The source the lines of :attr:`head_lines` are in."""
    moved_lines: int = field(default=0, compare=False)
    """How many lines further on than recorded the calls kept are (:attr:`places`,
    :attr:`head_lines` and the violations' ``where``): :meth:`relocated` adds to it instead
    of rewriting every location, and a merge applies it as it takes the state in."""

    @property
    def violation_count(self) -> int:
        """Every violation found, counted."""
        return len(self.violations) + self.omitted

    def __getstate__(self) -> dict[str, Any]:
        return _packed_state(self.__dict__)

    def __setstate__(self, state: dict[str, Any]) -> None:
        _unpacked_state(self, state)

    def relocated(self, lines: int) -> SeqState:
        """The same state with its calls' lines ``lines`` further on (a part read alone)."""
        if not lines:
            return self
        return replace(self, moved_lines=self.moved_lines + lines)

    def settled(self) -> SeqState:
        """The same state with :attr:`moved_lines` applied to every location it keeps."""
        lines = self.moved_lines
        if not lines:
            return self
        places = tuple((i, _moved_line(loc, lines)) for i, loc in self.places)
        violations = _relocated_violations(self.violations, lines)
        moved = tuple(head.shifted(lines, markers=False) for head in self.head_lines)
        return replace(self, places=places, violations=violations, head_lines=moved, moved_lines=0)

    def merge_found(
        self, later: SeqState, maxes: tuple[int | None, ...], budgets: tuple[bool, ...],
        tools: tuple[str | None, ...], rules: tuple[str, ...], orders: tuple[tuple[str, str], ...],
        order_ids: tuple[str, ...],
    ) -> tuple[SeqState, list[Violation]]:  # fmt: skip
        """This stretch followed by ``later``, and the violations only the two together
        show, with ``later``'s own (moved after this stretch): every violation new to the
        merged state, in call order. Count and order violations are found only when this
        stretch starts the trace."""
        run = SeqRun.of(self)
        found = run.absorb(later, maxes, budgets, tools, rules, orders, order_ids)
        return run.frozen(), found


class SeqRun:
    """A :class:`SeqState` being built, batch after batch, in place: what the check keeps
    while it reads. Merging a batch's state into it costs that batch, not the stretch read
    so far (a frozen state copied its violations, heads and places at every batch: time
    quadratic in them). :meth:`frozen` is the :class:`SeqState`."""

    __slots__ = (
        "calls", "counts", "firsts", "head_lines", "heads", "match", "omitted", "origin",
        "places", "seen", "source", "violations",
    )  # fmt: skip

    def __init__(self, state: SeqState) -> None:
        state = state.settled()
        self.origin = state.origin
        self.calls = state.calls
        self.counts = list(state.counts)
        self.heads = [head.copy() for head in state.heads]
        self.head_lines = [_lines(state, r) for r in range(len(state.heads))]
        self.source = state.source
        self.seen = list(state.seen)
        self.firsts = list(state.first_after)
        self.violations = list(state.violations)
        self.omitted = state.omitted
        self.match = state.match
        self.places: dict[int, Location | None] = dict(state.places)

    @classmethod
    def of(cls, state: SeqState) -> SeqRun:
        return cls(state)

    def frozen(self) -> SeqState:
        return SeqState(
            self.origin, self.calls, tuple(self.counts), tuple(map(Runs.copy, self.heads)),
            tuple(self.seen), tuple(self.firsts),
            tuple(self.violations), self.match, tuple(sorted(self.places.items())),
            self.omitted, tuple(map(Runs.copy, self.head_lines)), self.source,
        )  # fmt: skip

    def absorb(
        self, later: SeqState, maxes: tuple[int | None, ...], budgets: tuple[bool, ...],
        tools: tuple[str | None, ...], rules: tuple[str, ...], orders: tuple[tuple[str, str], ...],
        order_ids: tuple[str, ...],
    ) -> list[Violation]:  # fmt: skip
        """Merge ``later`` into this stretch, in place: the violations new to it, in call
        order (see :meth:`SeqState.merge_found`)."""
        shift = self.calls
        origin = self.origin
        found: list[Violation] = []
        lines = later.moved_lines
        at_later = _places(later.places, shift, lines)
        counts = self.counts
        for r, theirs in enumerate(later.counts):
            if not theirs:
                continue
            mine = counts[r]
            total = mine + theirs
            counts[r] = total
            high = maxes[r]
            if high is None:
                continue
            if origin:
                if mine <= high < total:  # went past max in the later stretch
                    k = high - mine  # its (k + 1)-th call
                    index = later.heads[r][k] + shift
                    v = _too_many(rules[r], index, tools[r], high, budgets[r])
                    found.append(v.but(where=_head_place(later, r, k, at_later, shift)))
                continue
            take = high + 1 - mine
            if take <= 0:
                continue
            added = later.heads[r].head(take)
            at_lines = _lines(later, r).head(take)
            if lines:
                at_lines = at_lines.shifted(lines, markers=False)
            if self.source is None:
                self.source = later.source
            if later.source != self.source:  # another source: each location in places
                at_lines = Runs([IN_PLACES] * len(added))
                for j in range(len(added)):
                    self.places[added[j] + shift] = _head_place(later, r, j, at_later, shift)
            elif IN_PLACES in at_lines:
                for j in range(len(added)):
                    if at_lines[j] == IN_PLACES:
                        self.places[added[j] + shift] = at_later.get(added[j] + shift)
            self.heads[r].extend(added.shifted(shift))
            self.head_lines[r].extend(at_lines)
        seen, firsts = self.seen, self.firsts
        for r, first in enumerate(firsts):
            was = seen[r]
            if later.seen[r]:
                seen[r] = True
            ahead = later.first_after[r]
            if first is not None or was or ahead is None:
                continue
            index = ahead + shift
            firsts[r] = index
            if origin:
                before, after = orders[r]
                found.append(
                    Violation(order_ids[r], "order_violation", index, after,
                              f"comes before any call to {before}", where=at_later.get(index))
                )  # fmt: skip
            else:
                self.places[index] = at_later.get(index)
        if later.violations:
            found.extend(v.moved(shift, lines) for v in later.violations)
        if found:
            found.sort(key=_by_index)
            self.omitted += _keep(self.violations, found, origin)
        self.omitted += later.omitted
        if self.match is not None and later.match is not None:
            self.match = self.match.merge(later.match)
        self.calls = shift + later.calls
        return found


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


IN_PLACES = -2
"""A head line that says "the location is in the state's places"."""
_NO_LOCATION = -1


def _places(places: Places, calls: int, lines: int) -> dict[int, Location | None]:
    """``places`` as a dict, ``calls`` calls and ``lines`` lines further on."""
    if not places:
        return {}
    if not lines:
        return {i + calls: loc for i, loc in places}
    return {i + calls: _moved_line(loc, lines) for i, loc in places}


def _lines(state: SeqState, r: int) -> Runs:
    if state.head_lines:
        return state.head_lines[r].copy()
    return Runs([IN_PLACES] * len(state.heads[r]))


def _head_place(
    state: SeqState, r: int, k: int, at_later: dict[int, Location | None], shift: int
) -> Location | None:
    """Where ``state``'s k-th head call of count rule ``r`` was read."""
    line = state.head_lines[r][k] if state.head_lines else IN_PLACES
    if line == _NO_LOCATION:
        return None
    if line == IN_PLACES:
        return at_later.get(state.heads[r][k] + shift)
    assert state.source is not None
    return Location(state.source, line + state.moved_lines)


def head_lines(
    positions: Sequence[int], location: Callable[[int], Location | None], source: str | None
) -> tuple[Runs, str | None, list[tuple[int, Location | None]]]:
    """The head lines of the calls at ``positions`` (see :attr:`SeqState.head_lines`), the
    source they are in (``source``, or the first located call's), and the places of the
    calls whose location is not a line of that source."""
    lines = array("q")
    odd: list[tuple[int, Location | None]] = []
    for i in positions:
        loc = location(i)
        if loc is None:
            lines.append(_NO_LOCATION)
            continue
        if source is None:
            source = loc.source
        if loc.line is not None and loc.offset is None and loc.source == source:
            lines.append(loc.line)
        else:
            lines.append(IN_PLACES)
            odd.append((i, loc))
    return Runs.of(lines), source, odd


def _by_index(v: Violation) -> tuple[int, str]:
    """Call order; at one call, by rule id (the order every way of reading gives)."""
    return (v.index if v.index is not None else 1 << 62, v.rule)


def _too_many(rule: str, index: int, tool: str | None, high: int, budget: bool) -> Violation:
    if budget:
        return Violation(rule, "step_budget_exceeded", index, None,
                         f"goes past the budget of {high} call{'s' * (high != 1)}")  # fmt: skip
    return Violation(rule, "too_many_calls", index, tool,
                     f"is call {high + 1} to {tool}; at most {high} allowed")  # fmt: skip


Source = tuple[int, str, str]
"""A data-flow source: ``(index, tool, what it did)``."""


@dataclass(frozen=True)
class FlowState:
    """The data-flow rules, read from completed calls in order (see the module docstring)."""

    origin: bool
    calls: int
    sources: tuple[Source | None, ...]
    """Per rule: the first source in the stretch."""
    pending: tuple[tuple[tuple[int, str], ...], ...]
    """Per rule, in a stretch that is not the origin: the sink calls ``(index, tool)`` before
    its first source (at most :data:`PENDING_SINKS`)."""
    violations: tuple[Violation, ...] = ()
    """As :attr:`SeqState.violations`."""
    places: Places = field(default=(), compare=False)
    omitted: int = 0
    """Violations found past the ones kept (counted, not kept)."""
    moved_lines: int = field(default=0, compare=False)
    """As :attr:`SeqState.moved_lines`."""

    @property
    def violation_count(self) -> int:
        """Every violation found, counted."""
        return len(self.violations) + self.omitted

    def __getstate__(self) -> dict[str, Any]:
        return _packed_state(self.__dict__)

    def __setstate__(self, state: dict[str, Any]) -> None:
        _unpacked_state(self, state)

    def relocated(self, lines: int) -> FlowState:
        """The same state with its calls' lines ``lines`` further on (a part read alone)."""
        if not lines:
            return self
        return replace(self, moved_lines=self.moved_lines + lines)

    def settled(self) -> FlowState:
        """The same state with :attr:`moved_lines` applied to every location it keeps."""
        lines = self.moved_lines
        if not lines:
            return self
        places = tuple((i, _moved_line(loc, lines)) for i, loc in self.places)
        violations = _relocated_violations(self.violations, lines)
        return replace(self, places=places, violations=violations, moved_lines=0)

    def merge_found(
        self, later: FlowState, rules: tuple[str, ...]
    ) -> tuple[FlowState, list[Violation]]:
        """This stretch followed by ``later``, and the violations new to the merged state
        (those only the two together show, and ``later``'s own, moved), in call order."""
        run = FlowRun.of(self)
        found = run.absorb(later, rules)
        return run.frozen(), found


class FlowRun:
    """A :class:`FlowState` being built in place, as :class:`SeqRun` is."""

    __slots__ = ("calls", "omitted", "origin", "pending", "places", "sources", "violations")

    def __init__(self, state: FlowState) -> None:
        state = state.settled()
        self.origin = state.origin
        self.calls = state.calls
        self.sources = list(state.sources)
        self.pending = [list(waiting) for waiting in state.pending]
        self.violations = list(state.violations)
        self.omitted = state.omitted
        self.places: dict[int, Location | None] = dict(state.places)

    @classmethod
    def of(cls, state: FlowState) -> FlowRun:
        return cls(state)

    def frozen(self) -> FlowState:
        return FlowState(
            self.origin, self.calls, tuple(self.sources), tuple(map(tuple, self.pending)),
            tuple(self.violations), tuple(sorted(self.places.items())), self.omitted,
        )  # fmt: skip

    def absorb(self, later: FlowState, rules: tuple[str, ...]) -> list[Violation]:
        """Merge ``later`` into this stretch, in place: the violations new to it, in call
        order (see :meth:`FlowState.merge_found`)."""
        shift = self.calls
        found: list[Violation] = []
        lines = later.moved_lines
        at_later = _places(later.places, shift, lines)
        earlier: dict[str, Source] = {}
        for r, source in enumerate(self.sources):
            waiting = later.pending[r]
            if source is not None:
                earlier[rules[r]] = source
                found.extend(
                    _leak(rules[r], i + shift, tool, source, at_later.get(i + shift))
                    for i, tool in waiting
                )
                continue
            theirs = later.sources[r]
            if theirs is not None:
                self.sources[r] = (theirs[0] + shift, theirs[1], theirs[2])
            if not self.origin:  # an origin keeps no sink without a source before it
                mine = self.pending[r]
                for index, tool in waiting[: max(PENDING_SINKS - len(mine), 0)]:
                    mine.append((index + shift, tool))
                    self.places[index + shift] = at_later.get(index + shift)
        # the source that counts is the first of the whole
        found.extend(v.moved(shift, lines, earlier.get(v.rule)) for v in later.violations)
        if found:
            found.sort(key=_by_index)
            self.omitted += _keep(self.violations, found, self.origin)
        self.omitted += later.omitted
        self.calls = shift + later.calls
        return found

    def leak(
        self,
        rules: tuple[str, ...],
        sinks: Sequence[Sequence[int]],
        tools: Sequence[str],
        location: Callable[[int], Location | None],
        calls: int,
    ) -> list[Violation]:
        """Read ``calls`` more calls, every rule having its source already (in the trace
        so far, or in this stretch): each call of ``sinks`` (per rule, its sink calls'
        positions among the new calls) is a violation. The same as :meth:`absorb` of those
        calls' own state, without making it. Returns the violations, in call order."""
        assert None not in self.sources
        shift = self.calls
        found = [
            _leak(rule, i + shift, tools[i], source, location(i))
            for rule, source, positions in zip(rules, self.sources, sinks, strict=True)
            if source is not None  # (always: asserted; for the type checker)
            for i in positions
        ]
        if len(rules) > 1:
            found.sort(key=_by_index)
        self.omitted += _keep(self.violations, found, self.origin)
        self.calls = shift + calls
        return found


def _leak(rule: str, index: int, tool: str, source: Source, where: Location | None) -> Violation:
    return Violation(rule, "data_flow", index, tool, "sends data out", None, source, where)
