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

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from ..calls import Location
from .matching import MatchState

__all__ = ["PENDING_SINKS", "FlowState", "SeqState", "Violation"]

PENDING_SINKS = 10_000
"""The sink calls a stretch that does not start the trace keeps per data-flow rule, waiting
for the earlier stretch to say whether a source came before them; past that, a part read by
another process reports the first 10,000 only."""


@dataclass(frozen=True, slots=True)
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

    def moved(self, calls: int) -> Violation:
        if self.index is None or not calls:
            return self
        source = self.source
        if source is not None:
            source = (source[0] + calls, source[1], source[2])
        return self.but(index=self.index + calls, source=source)

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


Places = tuple[tuple[int, Location | None], ...]
"""Where the calls a state keeps pending were read, ``(index, location)``: what a finding
found at a merge shows. Never part of a state's equality (a part numbers its lines from 1)."""


def _places(
    mine: Places, theirs: Places, shift: int, keep: Iterable[int]
) -> tuple[Places, dict[int, Location | None]]:
    """The places of both stretches (the later one's moved), those in ``keep`` kept, and all
    of the later one's by their index in the merged state."""
    later = {i + shift: loc for i, loc in theirs}
    both = dict(mine)
    both.update(later)
    return tuple((i, both.get(i)) for i in sorted(set(keep))), later


def _moved_line(loc: Location | None, lines: int) -> Location | None:
    if loc is None or loc.line is None or not lines:
        return loc
    return Location(loc.source, loc.line + lines, loc.offset)


def _relocated_violations(violations: tuple[Violation, ...], lines: int) -> tuple[Violation, ...]:
    return tuple(v.but(where=_moved_line(v.where, lines)) for v in violations)


@dataclass(frozen=True)
class SeqState:
    """The rules read from new calls in order: counts, order, the allowlist, the schemas
    and the match modes (see the module docstring)."""

    origin: bool
    calls: int
    counts: tuple[int, ...]
    """Per count rule: the calls to its tool (every call for a step budget)."""
    heads: tuple[tuple[tuple[int, int], ...], ...]
    """Per count rule with a ``max``, in a stretch that is not the origin: ``(k, index)`` of
    the first ``max + 1`` calls to the tool (of every call, for a budget), the k-th counted
    from 0 in the stretch. A batch read into an origin state keeps only the one call that
    can go past ``max``."""
    seen: tuple[bool, ...]
    """Per order rule: ``before`` was called."""
    first_after: tuple[int | None, ...]
    """Per order rule: the first call to ``after`` with no ``before`` ahead of it (a
    violation in an origin state, pending otherwise)."""
    violations: tuple[Violation, ...] = ()
    match: MatchState | None = None
    places: Places = field(default=(), compare=False)

    def relocated(self, lines: int) -> SeqState:
        """The same state with its calls' lines ``lines`` further on (a part read alone)."""
        if not lines:
            return self
        places = tuple((i, _moved_line(loc, lines)) for i, loc in self.places)
        violations = _relocated_violations(self.violations, lines)
        return replace(self, places=places, violations=violations)

    def merge_found(
        self, later: SeqState, maxes: tuple[int | None, ...], budgets: tuple[bool, ...],
        tools: tuple[str | None, ...], rules: tuple[str, ...], orders: tuple[tuple[str, str], ...],
        order_ids: tuple[str, ...],
    ) -> tuple[SeqState, list[Violation]]:  # fmt: skip
        """This stretch followed by ``later``, and the violations only the two together
        show, with ``later``'s own (moved after this stretch): every violation new to the
        merged state, in call order. Count and order violations are found only when this
        stretch starts the trace."""
        shift = self.calls
        found: list[Violation] = []
        counts: list[int] = []
        heads: list[tuple[tuple[int, int], ...]] = []
        _, at_later = _places((), later.places, shift, ())
        for r, (mine, theirs) in enumerate(zip(self.counts, later.counts, strict=True)):
            total = mine + theirs
            counts.append(total)
            high = maxes[r]
            if high is None:
                heads.append(())
                continue
            if self.origin and mine <= high < total:  # went past max in the later stretch
                index = dict(later.heads[r])[high - mine] + shift  # its (high-mine+1)-th call
                v = _too_many(rules[r], index, tools[r], high, budgets[r])
                found.append(v.but(where=at_later.get(index)))
            if self.origin:
                heads.append(())
            else:
                moved = tuple((k + mine, i + shift) for k, i in later.heads[r] if k + mine <= high)
                heads.append(self.heads[r] + moved)
        seen: list[bool] = []
        firsts: list[int | None] = []
        for r, (was, first) in enumerate(zip(self.seen, self.first_after, strict=True)):
            seen.append(was or later.seen[r])
            if first is not None or was or later.first_after[r] is None:
                firsts.append(first)
                continue
            index = later.first_after[r] + shift  # type: ignore[operator]
            firsts.append(index)
            if self.origin:
                before, after = orders[r]
                found.append(
                    Violation(order_ids[r], "order_violation", index, after,
                              f"comes before any call to {before}", where=at_later.get(index))
                )  # fmt: skip
        new = sorted(found + [v.moved(shift) for v in later.violations], key=_by_index)
        violations = self.violations + tuple(new) if new else self.violations
        match = self.match
        if match is not None and later.match is not None:
            match = match.merge(later.match)
        places: Places = ()
        if not self.origin:
            keep = [i for head in heads for _, i in head]
            keep += [i for i in firsts if i is not None]
            places, _ = _places(self.places, later.places, shift, keep)
        state = SeqState(
            self.origin, shift + later.calls, tuple(counts), tuple(heads), tuple(seen),
            tuple(firsts), violations, match, places,
        )  # fmt: skip
        return state, new


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
    places: Places = field(default=(), compare=False)

    def relocated(self, lines: int) -> FlowState:
        """The same state with its calls' lines ``lines`` further on (a part read alone)."""
        if not lines:
            return self
        places = tuple((i, _moved_line(loc, lines)) for i, loc in self.places)
        violations = _relocated_violations(self.violations, lines)
        return replace(self, places=places, violations=violations)

    def merge_found(
        self, later: FlowState, rules: tuple[str, ...]
    ) -> tuple[FlowState, list[Violation]]:
        """This stretch followed by ``later``, and the violations new to the merged state
        (those only the two together show, and ``later``'s own, moved), in call order."""
        shift = self.calls
        found: list[Violation] = []
        sources: list[Source | None] = []
        pending: list[tuple[tuple[int, str], ...]] = []
        _, at_later = _places((), later.places, shift, ())
        for r, source in enumerate(self.sources):
            waiting = later.pending[r]
            if source is not None:
                found.extend(
                    _leak(rules[r], i + shift, tool, source, at_later.get(i + shift))
                    for i, tool in waiting
                )
                sources.append(source)
                pending.append(() if self.origin else self.pending[r])
                continue
            theirs = later.sources[r]
            sources.append(None if theirs is None else (theirs[0] + shift, theirs[1], theirs[2]))
            if self.origin:
                pending.append(())  # sinks with no source before them: nothing to report
            else:
                moved = tuple((index + shift, tool) for index, tool in waiting)
                pending.append((self.pending[r] + moved)[:PENDING_SINKS])
        earlier = {rules[r]: src for r, src in enumerate(self.sources) if src is not None}
        for v in later.violations:
            placed = v.moved(shift)
            if v.rule in earlier:  # the source that counts is the first of the whole
                placed = placed.but(source=earlier[v.rule])
            found.append(placed)
        found.sort(key=_by_index)
        violations = self.violations + tuple(found) if found else self.violations
        places: Places = ()
        if not self.origin:
            places, _ = _places(self.places, later.places, shift,
                                (i for waiting in pending for i, _ in waiting))  # fmt: skip
        state = FlowState(
            self.origin, shift + later.calls, tuple(sources), tuple(pending), violations, places
        )
        return state, found


def _leak(rule: str, index: int, tool: str, source: Source, where: Location | None) -> Violation:
    return Violation(rule, "data_flow", index, tool, "sends data out", None, source, where)
