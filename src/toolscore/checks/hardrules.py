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

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..calls import Batch, Finding, ToolCall
from ..hardrules.matching import MatchState, args_match, call_modes, verdicts
from ..hardrules.spec import RuleSet
from ..hardrules.state import PENDING_SINKS, FlowState, SeqState, Source, Violation
from ..redact import may_contain_secret, redact_secrets, scan_text
from ..rules import CompiledRule
from ._base import BaseCheck

__all__ = ["HardRulesCheck", "hard_rules_check"]

_MASK_CACHE = 4096


def _positions(tools: list[str], tool: str, limit: int, stop: int | None = None) -> list[int]:
    """The positions of the first ``limit`` calls to ``tool`` (before ``stop``)."""
    out: list[int] = []
    end = len(tools) if stop is None else stop
    at = -1
    while len(out) < limit:
        try:
            at = tools.index(tool, at + 1, end)
        except ValueError:
            break
        out.append(at)
    return out


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
            part): it keeps what it finds in its state, for :meth:`merge_part`.
    """

    name = "rules"
    mergeable = True

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
        self._gold_by_tool: dict[str, list[int]] = {}
        for g, call in enumerate(self.gold):
            self._gold_by_tool.setdefault(call.tool, []).append(g)
        self._mask_cache: dict[tuple[str, bytes], int] = {}
        n_counts, n_orders = len(counts), len(rules.order)
        match = MatchState(len(self.gold)) if self._modes else None
        self.seq = SeqState(
            not part, 0, (0,) * n_counts, ((),) * n_counts, (False,) * n_orders,
            (None,) * n_orders, (), match,
        )  # fmt: skip
        n_flows = len(self._flows)
        self.flow = FlowState(not part, 0, (None,) * n_flows, ((),) * n_flows)
        self.end: tuple[Violation, ...] = ()
        """The violations found at the end of the trace (``min`` counts, match modes)."""
        self.verdicts: dict[str, tuple[bool, str]] = {}

    # -- reading -------------------------------------------------------------------------

    def feed(self, batch: Batch) -> list[Finding]:
        found: list[Violation] = []
        if batch.n_calls:
            span = self._seq_span(batch.columns())
            self.seq, new = self._merge_seq(self.seq, span)
            found.extend(new)
        if self._flows and batch.n_done:
            span_f = self._flow_span(batch.done_columns())
            self.flow, new_f = self.flow.merge_found(span_f, self._flow_ids)
            found.extend(new_f)
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
        n = len(tools)
        counts: list[int] = []
        heads: list[tuple[int, ...]] = []
        state = self.seq
        for r, (tool, high) in enumerate(zip(self._count_tools, self._maxes, strict=True)):
            c = n if tool is None else tools.count(tool)
            counts.append(c)
            if high is None or not c:
                heads.append(())
                continue
            # the calls a merge may report: from the start of the trace, only the one past max
            need = high + 1 - state.counts[r] if state.origin else high + 1
            if need <= 0:
                heads.append(())
            elif tool is None:
                heads.append(tuple(range(min(c, need))))
            else:
                heads.append(tuple(_positions(tools, tool, min(c, need))))
        seen: list[bool] = []
        firsts: list[int | None] = []
        for before, after in self._orders:
            try:
                stop = tools.index(before)
            except ValueError:
                seen.append(False)
                stop = n
            else:
                seen.append(True)
            first = _positions(tools, after, 1, stop)
            firsts.append(first[0] if first else None)
        location = cols.location
        keep = {i for head in heads for i in head}
        keep.update(i for i in firsts if i is not None)
        places = tuple((i, location(i)) for i in sorted(keep))
        violations: list[Violation] = []
        if self._allow is not None and not self._allow.issuperset(tools):
            allowed = self._allow
            rule = self.rules.allow_id
            violations.extend(
                Violation(rule, "tool_not_allowed", i, t, "is not an allowed tool")
                for i, t in enumerate(tools)
                if t not in allowed
            )
        if self._schemas is not None and not self._schema_tools.isdisjoint(tools):
            violations.extend(self._schema_violations(cols))
            violations.sort(key=_order_key)
        match = None
        if self._modes:
            match = MatchState.of(len(self.gold), self._masks(cols), tools)
        placed = tuple(replace(v, where=location(v.index)) for v in violations)
        return SeqState(
            False, n, tuple(counts), tuple(heads), tuple(seen), tuple(firsts),
            placed, match, places,
        )  # fmt: skip

    def _schema_violations(self, cols: Any) -> list[Violation]:
        schemas = self._schemas
        assert schemas is not None
        wanted = self._schema_tools
        tools: list[str] = cols.tools
        args = cols.args
        sigs = cols.sigs()
        out: list[Violation] = []
        for i in [i for i, t in enumerate(tools) if t in wanted]:
            problem = schemas.problem(tools[i], args[i], sigs[i])
            if problem is None:
                continue
            path, text, count = problem
            more = f" ({count} problems)" if count > 1 else ""
            out.append(
                Violation(f"schema:{tools[i]}", "schema_violation", i, tools[i],
                          f"arguments fail its schema at '{path or '(root)'}': {text}{more}",
                          path)
            )  # fmt: skip
        return out

    def _masks(self, cols: Any) -> list[int]:
        """For each call, the expected calls it matches (bit g: expected call g)."""
        tools: list[str] = cols.tools
        by_tool = self._gold_by_tool
        masks = [0] * len(tools)
        hits = [i for i, t in enumerate(tools) if t in by_tool]
        if not hits:
            return masks
        args = cols.args
        sigs = cols.sigs()
        cache = self._mask_cache
        gold = self.gold
        modes = self.rules.arguments
        strict = self.strict
        for i in hits:
            tool = tools[i]
            key = (tool, sigs[i])
            mask = cache.get(key)
            if mask is None:
                mode, per_arg = call_modes(modes, tool)
                mask = 0
                for g in by_tool[tool]:
                    if args_match(gold[g].args, args[i], mode, per_arg, strict):
                        mask |= 1 << g
                if len(cache) >= _MASK_CACHE:
                    cache.clear()
                cache[key] = mask
            masks[i] = mask
        return masks

    def _flow_span(self, cols: Any) -> FlowState:
        tools: list[str] = cols.tools
        n = len(tools)
        creds: dict[int, str] = {}
        if self._credentials:
            creds = _credential_results(cols)
        sources: list[Source | None] = []
        pending: list[tuple[tuple[int, str], ...]] = []
        violations: list[Violation] = []
        for flow, rule_id in zip(self._flows, self._flow_ids, strict=True):
            first: Source | None = None
            if flow.credentials and creds:
                i = min(creds)
                first = (i, tools[i], f"returned a credential ({creds[i]})")
            for tool, tests in flow.sources.items():
                if first is not None:
                    positions = _positions(tools, tool, first[0] + 1, first[0])
                else:
                    positions = _positions(tools, tool, n)
                if not positions:
                    continue
                args = cols.args
                for why, test in tests:
                    found = test.select([args[p] for p in positions])
                    if found:
                        p = positions[found[0]]
                        if first is None or p < first[0]:
                            first = (p, tool, f"({why})")
            sources.append(first)
            if flow.sinks.isdisjoint(tools):
                pending.append(())
                continue
            sinks = flow.sinks
            stop = n if first is None else first[0] + 1
            before = [(i, t) for i, t in enumerate(tools[:stop]) if t in sinks]
            pending.append(tuple(before[:PENDING_SINKS]))
            if first is not None:
                src = first
                violations.extend(
                    Violation(rule_id, "data_flow", i, t, "sends data out", None, src)
                    for i, t in enumerate(tools[stop:], stop)
                    if t in sinks
                )
        violations.sort(key=_order_key)
        location = cols.location
        placed = tuple(replace(v, where=location(v.index)) for v in violations)
        keep = sorted({i for waiting in pending for i, _ in waiting})
        places = tuple((i, location(i)) for i in keep)
        return FlowState(False, n, tuple(sources), tuple(pending), placed, places)

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

    def part_state(self) -> tuple[SeqState, FlowState]:
        return self.seq, self.flow

    def state(self) -> tuple[SeqState, FlowState]:
        """The check's state: what it read, mergeable with a later part's."""
        return self.seq, self.flow

    def merge_part(
        self, state: tuple[SeqState, FlowState], calls: int, lines: int
    ) -> list[Finding]:
        """Take in a later part's state: the part's own violations and those only the two
        together show, as findings (a part keeps its findings in its state)."""
        seq, flow = state
        self.seq, found = self._merge_seq(self.seq, seq.relocated(lines))
        self.flow, found_f = self.flow.merge_found(flow.relocated(lines), self._flow_ids)
        found.extend(found_f)
        if self.part:
            return []
        found.sort(key=_order_key)
        return [self._finding(v) for v in found]

    # -- results -------------------------------------------------------------------------

    @property
    def violations(self) -> list[Violation]:
        """Every violation, in call order (those at the end of the trace last)."""
        both = sorted((*self.seq.violations, *self.flow.violations), key=_order_key)
        return [*both, *self.end]

    def _finding(self, v: Violation) -> Finding:
        return Finding(
            check="rules",
            kind=v.kind,
            severity="error",
            message=self.message(v),
            call_index=v.index,
            tool=v.tool,
            location=v.where,
            path=v.path,
        )

    def message(self, v: Violation) -> str:
        """A violation as one line (redacted)."""
        reason = self._reasons.get(v.rule)
        tail = f" (rule {v.rule}{': ' + reason if reason else ''})"
        if v.index is None:
            return redact_secrets(f"{v.text()}{tail}")
        who = f"call {v.index + 1}" + (f" {v.tool}" if v.tool else "")
        return redact_secrets(f"{who} {v.text()}{tail}")

    def metrics(self) -> dict[str, Any]:
        """``{"rule_metrics": {"violation_count", "rule_count", "violations", "match"}}``."""
        records = [
            {
                "rule": v.rule,
                "kind": v.kind,
                "index": v.index,
                "tool": v.tool,
                "path": v.path,
                "message": self.message(v),
            }
            for v in self.violations
        ]
        out: dict[str, Any] = {
            "violation_count": len(records),
            "rule_count": self.rules.rule_count(),
            "violations": records,
        }
        if self.verdicts:
            out["match"] = {
                mode: {"passed": passed, "detail": why}
                for mode, (passed, why) in self.verdicts.items()
            }
        return {"rule_metrics": out}


def _order_key(v: Violation) -> tuple[int, str]:
    return (v.index if v.index is not None else 1 << 62, v.rule)


def _credential_results(cols: Any) -> dict[int, str]:
    """``{position: credential kind}`` of the calls whose result holds a credential."""
    texts: list[bytes | None] = cols.result_texts()
    present = [t for t in texts if t]
    if not present or not may_contain_secret(b"\n".join(present)):
        return {}
    out: dict[int, str] = {}
    for i, text in enumerate(texts):
        if text and may_contain_secret(text):
            found = scan_text(text.decode("utf-8", "replace"))
            if found:
                out[i] = found[0][2]
    return out


def hard_rules_check(
    rules: RuleSet, gold: Sequence[ToolCall] = (), *, strict: bool = False, part: bool = False
) -> HardRulesCheck:
    """A hard-rules check over ``rules`` (see :class:`HardRulesCheck`)."""
    return HardRulesCheck(rules, gold, strict=strict, part=part)
