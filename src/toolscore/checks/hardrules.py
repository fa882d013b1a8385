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
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from itertools import accumulate, compress
from typing import Any

from ..calls import Batch, Finding, Location, ToolCall
from ..capped import MAX_RECORDS
from ..hardrules.matching import MatchState, call_modes, column_match, verdicts
from ..hardrules.runs import Runs
from ..hardrules.spec import RuleSet
from ..hardrules.state import (
    PENDING_SINKS,
    FlowRun,
    FlowState,
    SeqRun,
    SeqState,
    Source,
    Violation,
    head_lines,
)
from ..redact import PREFILTER_SCAN, redact_secrets, scan_text
from ..rules import CompiledRule
from ._base import BaseCheck, State

__all__ = ["HardRulesCheck", "RulesState", "hard_rules_check"]


class _Flow:
    """One data-flow rule, compiled."""

    __slots__ = ("credentials", "rule", "sinks", "sources")

    def __init__(self, rule: Any) -> None:
        self.rule = rule
        self.sinks: frozenset[str] = rule.sinks
        self.credentials: bool = rule.credentials
        self.sources: dict[str, list[tuple[str, CompiledRule]]] = {}
        for j, source in enumerate(rule.sources):
            why = source["reason"] or f"matched source {j + 1}"
            self.sources.setdefault(source["tool"], []).append(
                (str(why), CompiledRule(source["args"]))
            )


class HardRulesCheck(BaseCheck):
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

    def _seq_span(self, cols: Any) -> SeqState:
        tools: list[str] = cols.tools
        groups: dict[str, list[int]] = cols.by_tool()
        n = len(tools)
        counts: list[int] = []
        heads: list[Sequence[int]] = []
        state = self.seq
        for r, (tool, high) in enumerate(zip(self._count_tools, self._maxes, strict=True)):
            at = range(n) if tool is None else groups.get(tool, ())
            c = len(at)
            counts.append(c)
            if high is None or not c:
                heads.append(())
                continue
            if not state.origin:  # a part: the first max + 1, for the merge
                first = min(c, high + 1)
            else:  # read from the start: only the call past max counts, the k-th
                k = high - state.counts[r]
                first = k + 1 if 0 <= k < c else 0
            heads.append(at[:first] if first else ())
        seen: list[bool] = []
        firsts: list[int | None] = []
        for before, after in self._orders:
            ahead = groups.get(after)
            stop = groups.get(before)
            seen.append(stop is not None)
            if ahead is None or (stop is not None and ahead[0] >= stop[0]):
                firsts.append(None)
            else:
                firsts.append(ahead[0])
        location = cols.location
        source: str | None = None
        lines: list[Runs] = []
        odd: list[tuple[int, Location | None]] = []
        for head in heads:
            at_lines, source, elsewhere = head_lines(head, location, source)
            lines.append(at_lines)
            odd.extend(elsewhere)
        keep = {i for i in firsts if i is not None}
        keep.difference_update(i for i, _ in odd)
        places = tuple(sorted([*((i, location(i)) for i in keep), *odd]))
        violations: list[Violation] = []
        if self._allow is not None and not self._allow.issuperset(groups):
            allowed = self._allow
            rule = self.rules.allow_id
            violations.extend(
                Violation(rule, "tool_not_allowed", i, t, _NOT_ALLOWED, None, None, location(i))
                for i, t in enumerate(tools)
                if t not in allowed
            )
        if self._schemas is not None and not self._schema_tools.isdisjoint(groups):
            violations.extend(self._schema_violations(cols, groups))
            violations.sort(key=_order_key)
        match = None
        if self._modes:
            match = MatchState.of(len(self.gold), self._masks(cols, groups), tools)
        placed = tuple(violations)
        return SeqState(
            False, n, tuple(counts), tuple(map(Runs.of, heads)), tuple(seen),
            tuple(firsts), placed, match, places, 0, tuple(lines), source,
        )  # fmt: skip

    def _schema_violations(self, cols: Any, groups: dict[str, list[int]]) -> list[Violation]:
        schemas = self._schemas
        assert schemas is not None
        tools: list[str] = cols.tools
        args = cols.args
        out: list[Violation] = []
        suspects: list[int] = []
        declared = self._schema_tools
        json_values = cols.json_values
        for tool, positions in groups.items():
            if tool in declared and not schemas.all_valid(
                tool, cols.args_of(tool), json_values=json_values
            ):
                suspects.extend(positions)
        suspects.sort()
        sigs = cols.sigs() if suspects else []
        for i in suspects:
            problem = schemas.problem(tools[i], args[i], sigs[i])
            if problem is None:
                continue
            path, text, count = problem
            more = f" ({count} problems)" if count > 1 else ""
            out.append(
                Violation(f"schema:{tools[i]}", "schema_violation", i, tools[i],
                          f"arguments fail its schema at '{path or '(root)'}': {text}{more}",
                          path, None, cols.location(i))
            )  # fmt: skip
        return out

    def _masks(self, cols: Any, groups: dict[str, list[int]]) -> list[int]:
        """For each call, the expected calls it matches (bit g: expected call g)."""
        by_tool = self._gold_by_tool
        masks = [0] * cols.n
        for tool, positions in groups.items():
            if tool not in by_tool:
                continue
            column = cols.args_of(tool)
            mode, per_arg = call_modes(self.rules.arguments, tool)
            for g, args in by_tool[tool]:
                bit = 1 << g
                ok = column_match(args, column, mode, per_arg, self.strict)
                for j in compress(range(len(positions)), ok):
                    masks[positions[j]] |= bit
        return masks

    def _flow_span(self, cols: Any) -> FlowState:
        tools: list[str] = cols.tools
        groups: dict[str, list[int]] = cols.by_tool()
        location = cols.location
        n = len(tools)
        state = self.flow
        # a rule whose source came already needs no source (every sink call is a violation:
        # from the start of the trace, or in a later part, after the part's first source,
        # which is the one its violations name until the merge), and one read from the start
        # without a source needs no sink before its source
        tainted = [src is not None for src in state.sources]
        creds: dict[int, str] = {}
        if any(f.credentials and not t for f, t in zip(self._flows, tainted, strict=True)):
            creds = _credential_results(cols)
        sources: list[Source | None] = []
        pending: list[tuple[tuple[int, str], ...]] = []
        violations: list[Violation] = []
        for r, (flow, rule_id) in enumerate(zip(self._flows, self._flow_ids, strict=True)):
            sinks = _sink_calls(flow.sinks, groups)
            if tainted[r]:
                sources.append(None)
                pending.append(tuple((i, tools[i]) for i in sinks))
                continue
            first = self._first_source(flow, cols, groups, creds)
            sources.append(first)
            if not sinks:
                pending.append(())
                continue
            stop = bisect_right(sinks, n if first is None else first[0])
            if state.origin:
                pending.append(())  # no source before them: nothing to report
            else:
                pending.append(tuple((i, tools[i]) for i in sinks[: min(stop, PENDING_SINKS)]))
            if first is not None:
                violations.extend(
                    Violation(
                        rule_id, "data_flow", i, tools[i], "sends data out", None, first,
                        location(i),
                    )
                    for i in sinks[stop:]
                )  # fmt: skip
        violations.sort(key=_order_key)
        placed = tuple(violations)
        keep = sorted({i for waiting in pending for i, _ in waiting})
        places = tuple((i, location(i)) for i in keep)
        return FlowState(False, n, tuple(sources), tuple(pending), placed, places)

    def _leaks(self, cols: Any) -> list[Violation]:
        """A batch read once every data-flow rule has its source (in the trace so far, or
        in this part): each sink call is a violation. What absorbing the batch's
        :meth:`_flow_span` finds, made directly (most of a trace's batches come after its
        first source)."""
        groups: dict[str, list[int]] = cols.by_tool()
        sinks = [_sink_calls(flow.sinks, groups) for flow in self._flows]
        return self.flow.leak(self._flow_ids, sinks, cols.tools, cols.location, cols.n)

    def _first_source(
        self, flow: _Flow, cols: Any, groups: dict[str, list[int]], creds: dict[int, str]
    ) -> Source | None:
        """The batch's first call that is a source of ``flow``."""
        tools: list[str] = cols.tools
        first: Source | None = None
        if flow.credentials and creds:
            i = min(creds)
            first = (i, tools[i], f"returned a credential ({creds[i]})")
        for tool, tests in flow.sources.items():
            positions = groups.get(tool, [])
            if first is not None:
                positions = positions[: bisect_right(positions, first[0] - 1)]
            if not positions:
                continue
            args = cols.args
            for why, test in tests:
                found = test.select([args[p] for p in positions])
                if found:
                    p = positions[found[0]]
                    if first is None or p < first[0]:
                        first = (p, tool, f"({why})")
        return first

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


_AT_CALL = "call {call} {detail}"
_NOT_ALLOWED = "is not an allowed tool"
_SAID = 4096
"""Redacted message texts a check remembers."""


def _order_key(v: Violation) -> tuple[int, str]:
    return (v.index if v.index is not None else 1 << 62, v.rule)


def _sink_calls(sinks: frozenset[str], groups: dict[str, list[int]]) -> list[int]:
    """The positions of the calls to any tool of ``sinks``, in order."""
    found = [groups[t] for t in sinks if t in groups]
    if len(found) == 1:
        return found[0]
    return sorted([i for at in found for i in at])


def _credential_results(cols: Any) -> dict[int, str]:
    """``{position: credential kind}`` of the calls whose result holds a credential: the
    batch's result texts searched as one for a credential's prefix (one pass in C), and
    only the results where one starts scanned closer."""
    texts: list[Any] = cols.result_texts()
    joined = b"\n".join(texts)
    first = PREFILTER_SCAN.search(joined)
    if first is None:
        return {}
    ends = list(accumulate(map(_PLUS_ONE, map(_nbytes, texts))))
    out: dict[int, str] = {}
    for m in PREFILTER_SCAN.finditer(joined, first.start()):
        i = bisect_right(ends, m.start())
        if i in out or i >= len(texts):
            continue
        text = bytes(texts[i]).decode("utf-8", "replace")
        found = scan_text(text)
        if found:
            out[i] = found[0][2]
        else:
            out[i] = ""  # looked at: nothing
    return {i: kind for i, kind in out.items() if kind}


_PLUS_ONE = (1).__add__


def _nbytes(text: Any) -> int:
    return memoryview(text).nbytes


def hard_rules_check(
    rules: RuleSet, gold: Sequence[ToolCall] = (), *, strict: bool = False, part: bool = False
) -> HardRulesCheck:
    """A hard-rules check over ``rules`` (see :class:`HardRulesCheck`)."""
    return HardRulesCheck(rules, gold, strict=strict, part=part)
