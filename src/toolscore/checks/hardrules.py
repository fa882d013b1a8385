"""The hard-rules check: allowlist, order, counts, step budget, schemas, data flow and the
trajectory match modes, each a pass/fail rule with an id.

A batch is read a column at a time (tool names with ``list.count``/``list.index`` and set
operations, which run in C), made into the state of that stretch
(:mod:`toolscore.hardrules.state`) and merged into the running state; the merge says which
rules broke, and each broken rule is a finding at once (at the call that broke it), or at
the end of the trace for ``min`` counts and the match modes. A rule kind that is not
configured costs nothing; the check is not built when no hard rule is.

Order, counts and the budget are read from the new calls (``batch.columns()``); data flow
from the completed ones (``batch.done_columns()``), since a source is known by its result.

Where things are: the check here; reading a batch into the state of its stretch in
``_rules_spans``; the check's state (:class:`RulesState`) and its merge in ``_rules_state``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..calls import Batch, Finding, ToolCall
from ..hardrules.matching import MatchState, verdicts
from ..hardrules.runs import Runs
from ..hardrules.spec import RuleSet
from ..hardrules.state import FlowRun, FlowState, SeqRun, SeqState, Violation
from ..redact import redact_secrets
from ._base import BaseCheck
from ._rules_spans import SpanReader, _Flow
from ._rules_state import RulesState, _order_key

__all__ = ["HardRulesCheck", "RulesState", "hard_rules_check"]


class HardRulesCheck(SpanReader, BaseCheck):
    """Checks the hard rules of a :class:`~toolscore.hardrules.spec.RuleSet`.

    Args:
        rules: the rules (only the hard ones are read here; forbidden rules are the policy
            check's).
        gold: the expected calls, for the match modes.
        strict: compare argument types exactly in the match modes.
        part: this check reads a part of a trace that does not start it (another process's
            part; as :meth:`begin_part`): it keeps what it finds in its state, for the merge.
    """

    name = "rules"
    mergeable = True
    """Its states merge (``toolscore.testing.check_conformance`` holds it to that). While it
    reads, the check keeps its state in place (:class:`~toolscore.hardrules.state.SeqRun`,
    :class:`~toolscore.hardrules.state.FlowRun`): a batch costs its own calls, whatever was
    found before it, and the frozen state is built when :meth:`state` is asked for."""

    def __init__(
        self,
        rules: RuleSet,
        gold: Sequence[ToolCall] = (),
        *,
        strict: bool = False,
        part: bool = False,
    ) -> None:
        self.rules = rules
        self.part = part
        self.strict = strict
        counts = rules.counts
        self._count_tools = tuple(r.tool for r in counts)
        self._maxes = tuple(r.max for r in counts)
        self._budgets = tuple(r.tool is None for r in counts)
        self._count_ids = tuple(r.id for r in counts)
        self._orders = tuple((r.before, r.after) for r in rules.order)
        self._order_ids = tuple(r.id for r in rules.order)
        self._allow = rules.allow
        self._schemas = rules.schemas
        self._schema_tools: frozenset[str] = (
            frozenset() if rules.schemas is None else rules.schemas.tools
        )
        self._flows = [_Flow(r) for r in rules.data_flow]
        self._flow_ids = tuple(r.id for r in rules.data_flow)
        self._credentials = any(f.credentials for f in self._flows)
        self._reasons: dict[str, str | None] = {r.id: r.reason for r in counts}
        self._reasons.update({r.id: r.reason for r in rules.order})
        self._reasons.update({r.id: r.reason for r in rules.data_flow})
        self._reasons[rules.allow_id] = rules.allow_reason
        self.gold = list(gold)
        self._modes = rules.match
        self._gold_by_tool: dict[str, list[tuple[int, Any]]] = {}
        """Per tool, the expected calls (position, args) it can satisfy: a position whose
        gold item lists alternatives is satisfied by any of them."""
        for g, call in enumerate(self.gold):
            for alt in call.metadata.get("alternatives") or (call,):
                self._gold_by_tool.setdefault(alt.tool, []).append((g, alt.args))
        self.seq, self.flow = self._start(part)
        self.end: tuple[Violation, ...] = ()
        """The violations found at the end of the trace (``min`` counts, match modes)."""
        self.verdicts: dict[str, tuple[bool, str]] = {}
        self._said_cache: dict[tuple[Any, ...], str] = {}

    def _start(self, part: bool) -> tuple[SeqRun, FlowRun]:
        n_counts, n_orders = len(self.rules.counts), len(self.rules.order)
        match = MatchState(len(self.gold)) if self._modes else None
        seq = SeqState(
            not part, 0, (0,) * n_counts, tuple(Runs() for _ in range(n_counts)),
            (False,) * n_orders,
            (None,) * n_orders, (), match,
        )  # fmt: skip
        n_flows = len(self._flows)
        flow = FlowState(not part, 0, (None,) * n_flows, ((),) * n_flows)
        return SeqRun(seq), FlowRun(flow)

    def begin_part(self) -> None:
        """Read a later part of a trace on its own: keep what it finds in its state."""
        self.part = True
        self.seq, self.flow = self._start(True)

    def resume(self, state: RulesState) -> None:
        """Go on from ``state`` (the merged state of the parts read so far): what
        :meth:`finish` reads."""
        assert state.seq is not None and state.flow is not None
        self.seq, self.flow = SeqRun(state.seq), FlowRun(state.flow)

    # -- reading -------------------------------------------------------------------------

    def feed(self, batch: Batch) -> list[Finding]:
        found: list[Violation] = []
        if batch.n_calls:
            span = self._seq_span(batch.columns())
            found.extend(
                self.seq.absorb(
                    span, self._maxes, self._budgets, self._count_tools, self._count_ids,
                    self._orders, self._order_ids,
                )
            )  # fmt: skip
        if self._flows and batch.n_done:
            if None not in self.flow.sources:
                found.extend(self._leaks(batch.done_columns()))
            else:
                span_f = self._flow_span(batch.done_columns())
                found.extend(self.flow.absorb(span_f, self._flow_ids))
        if self.part or not found:
            return []
        found.sort(key=_order_key)
        return [self._finding(v) for v in found]

    def _merge_seq(self, state: SeqState, later: SeqState) -> tuple[SeqState, list[Violation]]:
        return state.merge_found(
            later,
            self._maxes,
            self._budgets,
            self._count_tools,
            self._count_ids,
            self._orders,
            self._order_ids,
        )

    # -- the end and parts ---------------------------------------------------------------

    def finish(self) -> list[Finding]:
        if self.part or not self.seq.origin:
            return []
        end: list[Violation] = []
        for r, rule in enumerate(self.rules.counts):
            if rule.min is not None and self.seq.counts[r] < rule.min:
                got = self.seq.counts[r]
                what = "calls" if rule.tool is None else f"calls to {rule.tool}"
                end.append(
                    Violation(rule.id, "too_few_calls", None, rule.tool,
                              f"{got} {what}; at least {rule.min} required")
                )  # fmt: skip
        match = self.seq.match
        if match is not None:
            self.verdicts = verdicts(match, self._modes, [c.tool for c in self.gold])
            for mode, (passed, why) in self.verdicts.items():
                if not passed:
                    end.append(
                        Violation(f"match:{mode}", "match_failed", None, None,
                                  f"trajectory match ({mode}) failed: {why}")
                    )  # fmt: skip
        self.end = tuple(end)
        return [self._finding(v) for v in end]

    def state(self) -> RulesState:
        """The check's state: what it read, mergeable with a later part's."""
        return RulesState(
            self.seq.frozen(), self.flow.frozen(), self.end, dict(self.verdicts), engine=self
        )

    # -- results -------------------------------------------------------------------------

    @property
    def violations(self) -> list[Violation]:
        """Every violation, in call order (those at the end of the trace last)."""
        return self.state().violations

    def _finding(self, v: Violation) -> Finding:
        if v.index is None:
            return Finding("rules", v.kind, "error", self.message(v), None, v.tool, v.where,
                           path=v.path)  # fmt: skip
        return Finding(
            "rules", v.kind, "error", None, v.index, v.tool, v.where, path=v.path,
            detail=self._said(v), template=_AT_CALL,
        )  # fmt: skip

    def message(self, v: Violation) -> str:
        """A violation as one line (redacted)."""
        if v.index is None:
            return redact_secrets(f"{v.text()}{self._tail(v.rule)}")
        return f"call {v.index + 1} {self._said(v)}"

    def _tail(self, rule: str) -> str:
        reason = self._reasons.get(rule)
        return f" (rule {rule}{': ' + reason if reason else ''})"

    def _said(self, v: Violation) -> str:
        """What a message says after ``call N``: the tool, what happened and the rule,
        redacted. Many violations say the same (an unknown tool, a sink after one source),
        so each text is redacted once (up to :data:`_SAID` texts)."""
        key = (v.rule, v.tool, v.detail, v.source)
        said = self._said_cache.get(key)
        if said is None:
            tool = f"{v.tool} " if v.tool else ""
            said = redact_secrets(f"{tool}{v.text()}{self._tail(v.rule)}")
            if len(self._said_cache) >= _SAID:
                self._said_cache.clear()
            self._said_cache[key] = said
        return said

    def metrics(self) -> dict[str, Any]:
        """:meth:`RulesState.metrics` of the calls so far."""
        return self.state().metrics()


_AT_CALL = "call {call} {detail}"
_SAID = 4096
"""Redacted message texts a check remembers."""


def hard_rules_check(
    rules: RuleSet, gold: Sequence[ToolCall] = (), *, strict: bool = False, part: bool = False
) -> HardRulesCheck:
    """A hard-rules check over ``rules`` (see :class:`HardRulesCheck`)."""
    return HardRulesCheck(rules, gold, strict=strict, part=part)
