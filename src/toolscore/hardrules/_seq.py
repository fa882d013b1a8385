"""The state of the rules read from new calls in order (counts, order, the allowlist, the
schemas, the match modes): :class:`SeqState`, and :class:`SeqRun`, which merges later
states into it (see :mod:`toolscore.hardrules.state`)."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ..calls import Location
from ._violation import (
    KeptStretch,
    Places,
    Violation,
    _by_index,
    _keep,
    _moved_line,
    _places,
    _relocated_violations,
)
from .matching import MatchState
from .runs import Runs


@dataclass(frozen=True)
class SeqState(KeptStretch):
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


IN_PLACES = -2
"""A head line that says "the location is in the state's places"."""
_NO_LOCATION = -1


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


def _too_many(rule: str, index: int, tool: str | None, high: int, budget: bool) -> Violation:
    if budget:
        return Violation(rule, "step_budget_exceeded", index, None,
                         f"goes past the budget of {high} call{'s' * (high != 1)}")  # fmt: skip
    return Violation(rule, "too_many_calls", index, tool,
                     f"is call {high + 1} to {tool}; at most {high} allowed")  # fmt: skip
