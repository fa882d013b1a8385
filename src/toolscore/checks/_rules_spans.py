"""Reading a batch for the hard-rules check: the state of the stretch of calls it holds
(:class:`~toolscore.hardrules.state.SeqState` from the new calls,
:class:`~toolscore.hardrules.state.FlowState` from the completed ones), column by column, and
the data-flow violations of a batch read once every source came (see
:mod:`toolscore.checks.hardrules`)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate, compress
from typing import Any

from ..calls import Location, ToolCall
from ..hardrules.matching import MatchState, call_modes, column_match
from ..hardrules.runs import Runs
from ..hardrules.spec import MatchMode, RuleSet
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
from ..redact import PREFILTER_SCAN, scan_text
from ..rules import CompiledRule
from ._rules_state import _order_key


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


class SpanReader:
    """What the hard-rules check reads a batch with: the state of the stretch a batch holds,
    made from its columns (a base of :class:`~toolscore.checks.hardrules.HardRulesCheck`,
    which sets these attributes from its rules)."""

    rules: RuleSet
    strict: bool
    gold: list[ToolCall]
    seq: SeqRun
    flow: FlowRun
    _count_tools: tuple[str | None, ...]
    _maxes: tuple[int | None, ...]
    _orders: tuple[tuple[str, str], ...]
    _allow: frozenset[str] | None
    _schemas: Any
    _schema_tools: frozenset[str]
    _modes: tuple[MatchMode, ...]
    _gold_by_tool: dict[str, list[tuple[int, Any]]]
    _flows: list[_Flow]
    _flow_ids: tuple[str, ...]

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
                # an undecided pattern match counts as a match (never a silent pass), said
                undecided: list[int] = []
                found = test.select([args[p] for p in positions], undecided)
                if found:
                    p = positions[found[0]]
                    if first is None or p < first[0]:
                        note = _UNDECIDED if found[0] in undecided else ""
                        first = (p, tool, f"({why}{note})")
        return first


_NOT_ALLOWED = "is not an allowed tool"
_UNDECIDED = "; undecided: its pattern took too long to match, counted as a match"


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
