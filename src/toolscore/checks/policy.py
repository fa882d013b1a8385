"""The forbidden-call check: each new call against the rules, reported as it is read.

Rules are indexed by tool name, so a call to a tool no rule names costs one dict lookup.
For each call only the first matching rule (lowest index) is recorded, as in Toolscore §8.2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..calls import Batch, Finding, Location, ToolCall
from ..capped import MAX_RECORDS
from ..rules import CompiledRules, Rule, rules_from_python
from ._base import BaseCheck, State

__all__ = ["PolicyCheck", "PolicyState", "policy_check"]


@dataclass(frozen=True)
class PolicyState(State):
    """The violations, in call order (``{"index", "tool", "args", "rule", "reason"}``), the
    number of rules and the calls checked."""

    calls: int = 0
    rule_count: int = 0
    violations: tuple[dict[str, Any], ...] = ()
    """The first :data:`~toolscore.capped.MAX_RECORDS` violations (each is a finding)."""
    count: int = -1
    """Every violation, counted (``-1``: ``len(violations)``)."""
    check: str = field(default="policy", kw_only=True)

    @property
    def violation_count(self) -> int:
        return len(self.violations) if self.count < 0 else self.count

    def merge(self, later: PolicyState) -> PolicyState:
        if not later.calls:
            return self
        room = max(MAX_RECORDS - len(self.violations), 0)
        moved = [{**v, "index": v["index"] + self.calls} for v in later.violations[:room]]
        return PolicyState(
            self.calls + later.calls,
            self.rule_count,
            (*self.violations, *moved),
            self.violation_count + later.violation_count,
        )

    def report(self) -> dict[str, Any]:
        """``{"violation_count", "rule_count", "violations"}`` (Toolscore's layout), and
        ``violations_omitted`` past :data:`~toolscore.capped.MAX_RECORDS` records."""
        report: dict[str, Any] = {
            "violation_count": self.violation_count,
            "rule_count": self.rule_count,
            "violations": list(self.violations),
        }
        if self.violation_count > len(self.violations):  # the JSON report's findings have all
            report["violations_omitted"] = self.violation_count - len(self.violations)
        return report

    def metrics(self) -> dict[str, Any]:
        """``{"policy_metrics": report()}``."""
        return {"policy_metrics": self.report()}


class PolicyCheck(BaseCheck):
    """Reports calls that match a forbidden rule; see the module docstring.

    Args:
        rules: rules in Python form, or as returned by ``rules_from_json`` (validated again).
    """

    name = "policy"
    mergeable = True

    def __init__(self, rules: Sequence[Mapping[str, Any]]) -> None:
        self.rules: list[Rule] = rules_from_python(rules)
        self._compiled = CompiledRules(self.rules)
        self.violations: list[dict[str, Any]] = []
        """The first :data:`~toolscore.capped.MAX_RECORDS` violations (every one is a finding)."""
        self.violation_count = 0
        """Every violation, counted."""
        self.calls = 0

    def check_call(self, call: ToolCall, index: int | None = None) -> dict[str, Any] | None:
        """Check one call; record and return its violation, or return None."""
        return self._check(call.tool, call.args, call.index if index is None else index)

    def _check(self, tool: str, args: Any, index: int) -> dict[str, Any] | None:
        rule_index = self._compiled.first_match(tool, args)
        if rule_index is None:
            return None
        return self._record(tool, args, index, rule_index)

    def _record(self, tool: str, args: Any, index: int, rule_index: int) -> dict[str, Any]:
        violation = self._compiled.violation(index, tool, args, rule_index)
        self.violation_count += 1
        if len(self.violations) < MAX_RECORDS:
            self.violations.append(violation)
        return violation

    def feed(self, batch: Batch) -> list[Finding]:
        """The batch's calls, a tool at a time and a rule at a time (see
        :meth:`~toolscore.rules.CompiledRules.match`); violations in call order."""
        cols = batch.columns()
        self.calls += cols.n
        tools = cols.tools
        args = cols.args
        matched, unsure_pairs = self._compiled.match(tools, args, cols.by_tool(), cols.args_of)
        unsure = set(unsure_pairs)
        findings: list[Finding] = []
        for i, rule_index in matched:
            violation = self._record(tools[i], args[i], cols.index(i), rule_index)
            undecided = (i, rule_index) in unsure
            if undecided:  # the record says so too (Toolscore's layout plus this one key)
                violation["undecided"] = True
            findings.append(_finding(violation, cols.location(i), undecided))
        return findings

    def state(self) -> PolicyState:
        return PolicyState(
            self.calls, len(self.rules), tuple(self.violations), self.violation_count
        )

    def report(self) -> dict[str, Any]:
        """:meth:`PolicyState.report` of the calls so far."""
        return self.state().report()

    def metrics(self) -> dict[str, Any]:
        """``{"policy_metrics": report()}``."""
        return {"policy_metrics": self.report()}


_MATCHES = "call {call} {tool} matches forbidden rule {rule}"
_MATCHES_BECAUSE = "call {call} {tool} matches forbidden rule {rule}: {detail}"
_UNDECIDED = (
    "call {call} {tool} matches forbidden rule {rule} (undecided: its pattern took too long "
    "to match, counted as a match)"
)
_UNDECIDED_BECAUSE = _UNDECIDED + ": {detail}"


def _finding(violation: dict[str, Any], location: Location | None, undecided: bool) -> Finding:
    reason = violation["reason"]
    if undecided:
        template = _UNDECIDED_BECAUSE if reason else _UNDECIDED
    else:
        template = _MATCHES_BECAUSE if reason else _MATCHES
    return Finding(
        "policy",
        "forbidden_call",
        "error",
        None,
        violation["index"],
        violation["tool"],
        location,
        rule=violation["rule"],
        detail=f"{reason}" if reason else None,
        template=template,
    )


def policy_check(rules: Sequence[Mapping[str, Any]]) -> PolicyCheck:
    """A forbidden-call check over ``rules`` (Python form or converted JSON form).

    Raises:
        RuleFileError: a malformed rule.
    """
    return PolicyCheck(rules)
