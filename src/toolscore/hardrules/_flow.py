"""The state of the data-flow rules, read from completed calls in order: :class:`FlowState`,
and :class:`FlowRun`, which merges later states into it (see
:mod:`toolscore.hardrules.state`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ..calls import Location
from ._violation import (
    KeptStretch,
    Places,
    Source,
    Violation,
    _by_index,
    _keep,
    _moved_line,
    _places,
    _relocated_violations,
)

PENDING_SINKS = 10_000
"""The sink calls a stretch that does not start the trace keeps per data-flow rule, waiting
for the earlier stretch to say whether a source came before them; past that, a part read by
another process reports the first 10,000 only."""


@dataclass(frozen=True)
class FlowState(KeptStretch):
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
