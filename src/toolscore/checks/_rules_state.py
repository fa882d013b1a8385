"""The hard-rules check's state (:class:`RulesState`): the sequence rules' state and the
data-flow rules', what the end of the trace showed, and how a later part's state merges into
it (see :mod:`toolscore.checks.hardrules`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from ..calls import Finding
from ..capped import MAX_RECORDS
from ..hardrules.state import FlowState, SeqState, Violation
from ._base import State

if TYPE_CHECKING:
    from .hardrules import HardRulesCheck


@dataclass(frozen=True)
class RulesState(State):
    """What the hard-rules check knows: the sequence rules' state (counts, order, the
    allowlist, schemas, match modes), the data-flow rules', and what the end of the trace
    showed. The check that made it (``engine``: the rules, compiled) is not compared nor
    pickled: a state sent to another process merges after one of that process's."""

    seq: SeqState | None = None
    flow: FlowState | None = None
    end: tuple[Violation, ...] = ()
    verdicts: dict[str, tuple[bool, str]] = field(default_factory=dict)
    engine: HardRulesCheck | None = field(default=None, compare=False, repr=False)
    check: str = field(default="rules", kw_only=True)
    last_merge: tuple[RulesState, RulesState, list[Violation]] | None = field(
        default=None, init=False, compare=False, repr=False
    )
    """The last merge made: ``(later, merged, violations found)``. The pipeline asks a state
    for :meth:`findings_between` a later one and then for :meth:`merge` with it, and both
    are that one merge (with a part's thousands of violations: made once, not twice). Not
    copied by ``dataclasses.replace`` (a relocated state merges anew)."""

    def __getstate__(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _LOCAL}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        for name in _LOCAL:
            object.__setattr__(self, name, None)

    def relocated(self, lines: int) -> RulesState:
        assert self.seq is not None and self.flow is not None
        return replace(self, seq=self.seq.relocated(lines), flow=self.flow.relocated(lines))

    def _merged(self, later: RulesState) -> tuple[RulesState, list[Violation]]:
        last = self.last_merge
        if last is not None and last[0] is later:
            return last[1], list(last[2])
        merged, found = self._merge_anew(later)
        object.__setattr__(self, "last_merge", (later, merged, list(found)))
        return merged, found

    def _merge_anew(self, later: RulesState) -> tuple[RulesState, list[Violation]]:
        engine = self.engine or later.engine
        assert engine is not None and self.seq is not None and self.flow is not None
        assert later.seq is not None and later.flow is not None
        seq, found = engine._merge_seq(self.seq, later.seq)
        flow, found_f = self.flow.merge_found(later.flow, engine._flow_ids)
        found.extend(found_f)
        found.sort(key=_order_key)
        return RulesState(seq, flow, engine=engine), found

    def merge(self, later: RulesState) -> RulesState:
        return self._merged(later)[0]

    def findings_between(self, later: RulesState) -> list[Finding]:
        """The later part's violations and those only the two together show (a part keeps
        its findings in its state); none while the earlier part is not the trace's start."""
        assert self.seq is not None
        if not self.seq.origin:
            return []
        merged, found = self._merged(later)
        assert merged.engine is not None
        return [merged.engine._finding(v) for v in found]

    @property
    def violations(self) -> list[Violation]:
        """The violations kept, in call order (those at the end of the trace last): the
        first :data:`~toolscore.capped.MAX_RECORDS` of the calls', and those at the end."""
        assert self.seq is not None and self.flow is not None
        seq, flow = self.seq.settled(), self.flow.settled()
        both = sorted((*seq.violations, *flow.violations), key=_order_key)
        if self.seq.origin:
            del both[MAX_RECORDS:]
        return [*both, *self.end]

    @property
    def violation_count(self) -> int:
        """Every violation, counted (kept or not)."""
        assert self.seq is not None and self.flow is not None
        return self.seq.violation_count + self.flow.violation_count + len(self.end)

    def metrics(self) -> dict[str, Any]:
        """``{"rule_metrics": {"violation_count", "rule_count", "violations", "match"}}``,
        and ``violations_omitted`` past :data:`~toolscore.capped.MAX_RECORDS` records (the
        count is exact)."""
        engine = self.engine
        assert engine is not None
        records = [
            {
                "rule": v.rule,
                "kind": v.kind,
                "index": v.index,
                "tool": v.tool,
                "path": v.path,
                "message": engine.message(v),
            }
            for v in self.violations
        ]
        count = self.violation_count
        out: dict[str, Any] = {
            "violation_count": count,
            "rule_count": engine.rules.rule_count(),
            "violations": records,
        }
        if count > len(records):  # the JSON report's findings have every one
            out["violations_omitted"] = count - len(records)
        if self.verdicts:
            out["match"] = {
                mode: {"passed": passed, "detail": why}
                for mode, (passed, why) in self.verdicts.items()
            }
        return {"rule_metrics": out}


_LOCAL = ("engine", "last_merge")
"""The fields a state does not take to another process."""


def _order_key(v: Violation) -> tuple[int, str]:
    return (v.index if v.index is not None else 1 << 62, v.rule)
