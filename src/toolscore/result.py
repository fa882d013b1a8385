"""The reducer: the checks' metrics in, one :class:`EvaluationResult` out.

Nothing here does I/O or knows about events loops: :func:`reduce` merges what each check's
state reports (``State.metrics()``; no check is imported or asked by name) into Toolscore
1.10's key layout, and :class:`EvaluationResult` computes the score, the grade and the
``to_dict`` record from it. Empty cases are decided per
metric in the checks; the one decided here is ``required_call_recall is None`` (nothing was
required), which counts as fully met in the score, as in Toolscore.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Any, ClassVar

from .calls import Finding, FindingCountKey, ToolCall
from .capped import join_capped
from .errors import InputError
from .gold import side_effect_note
from .records import call_record, expected_record, json_safe
from .verdict import PassCriterion, Verdict, judge, letter_grade

if TYPE_CHECKING:
    from .checks._base import State

__all__ = [
    "DEFAULT_WEIGHTS",
    "EFFICIENCY_KEYS",
    "EXTRA_KEYS",
    "RECORD_SCHEMA_VERSION",
    "EvaluationResult",
    "call_record",
    "compute_score",
    "expected_record",
    "json_safe",
    "normalize_weights",
    "parse_weights",
    "reduce",
]

DEFAULT_WEIGHTS: dict[str, float] = {
    "selection_accuracy": 0.4,
    "argument_f1": 0.3,
    "sequence_accuracy": 0.2,
    "redundant_rate": 0.1,
    "required_call_recall": 0.0,
}
"""Toolscore's score weights, in the order the score adds its terms."""

RECORD_SCHEMA_VERSION = "2"
"""``to_dict()["schema_version"]``."""

EFFICIENCY_KEYS: tuple[tuple[str, int | float], ...] = (
    ("redundant_count", 0),
    ("total_calls", 0),
    ("redundant_rate", 0.0),
    ("identical_count", 0),
    ("identical_rate", 0.0),
    ("error_count", 0),
    ("error_rate", 0.0),
    ("retry_after_error_count", 0),
)
"""``efficiency_metrics`` keys in Toolscore's order, with their value for an empty trace."""

_EXPECTED_KEYS = (
    "invocation_accuracy",
    "selection_accuracy",
    "tool_correctness_metrics",
    "sequence_metrics",
    "trajectory_metrics",
    "argument_metrics",
)


def _sorted_set(keys: Any) -> str:
    return "{" + ", ".join(repr(k) for k in sorted(keys, key=str)) + "}"


def normalize_weights(weights: Mapping[str, Any] | None) -> dict[str, float]:
    """Validate score weights and merge them with the defaults, as Toolscore does.

    ``None`` gives the defaults unchanged. Any mapping (even ``{}``) is merged over the
    defaults and every weight divided by the merged float sum, so ``{}`` turns a perfect
    score of 0.9999999999999999 into 1.0000000000000002, exactly like Toolscore.

    Args:
        weights: user weights by name (``selection_accuracy``, ``argument_f1``,
            ``sequence_accuracy``, ``redundant_rate``, ``required_call_recall``).

    Returns:
        The five weights, in :data:`DEFAULT_WEIGHTS` order.

    Raises:
        ValueError: an unknown key, a value that is not a finite number (a string included,
            where Toolscore raises TypeError), a negative value, or weights summing to zero.
    """
    if weights is None:
        return dict(DEFAULT_WEIGHTS)
    unknown = set(weights) - set(DEFAULT_WEIGHTS)
    if unknown:
        raise ValueError(
            f"Unknown weight keys: {_sorted_set(unknown)}. "
            f"Valid keys: {_sorted_set(DEFAULT_WEIGHTS)}"
        )
    for key, value in weights.items():
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"Weight for '{key}' must be a finite number, got {value}")
        if value < 0:
            raise ValueError(f"Weight for '{key}' must be non-negative, got {value}")
    merged: dict[str, float] = {**DEFAULT_WEIGHTS, **weights}
    total = sum(merged.values())
    if total == 0:
        raise ValueError(
            "Weights sum to zero after merging with defaults; at least one weight must be positive."
        )
    return {key: value / total for key, value in merged.items()}


def parse_weights(items: list[str]) -> dict[str, float] | None:
    """Parse repeated ``--weight NAME=VALUE`` options (``None`` when none were given).

    Only the form is checked here; names and values are checked by the evaluation.

    Raises:
        ValueError: an item is not ``NAME=VALUE`` with a number as value.
    """
    if not items:
        return None
    weights: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError
            weights[name.strip()] = float(value)
        except ValueError:
            raise ValueError(f"--weight: expected NAME=VALUE, got {item!r}") from None
    return weights


def compute_score(metrics: Mapping[str, Any], weights: Mapping[str, float]) -> float:
    """The composite score, with Toolscore's terms added left to right.

    ``sel + f1 + seq + (1 - redundant_rate) + required_call_recall`` (each weighted), where a
    ``None`` recall (nothing required) counts as 1.0. Not clamped.
    """
    sel = float(metrics.get("selection_accuracy", 0.0))
    f1 = float((metrics.get("argument_metrics") or {}).get("f1", 0.0))
    seq = float((metrics.get("sequence_metrics") or {}).get("sequence_accuracy", 0.0))
    red = float((metrics.get("efficiency_metrics") or {}).get("redundant_rate", 0.0))
    recall = metrics.get("required_call_recall")
    completed = 1.0 if recall is None else float(recall)
    w = weights
    score: float = (
        w["selection_accuracy"] * sel
        + w["argument_f1"] * f1
        + w["sequence_accuracy"] * seq
        + w["redundant_rate"] * (1.0 - red)
        + w["required_call_recall"] * completed
    )
    return score


class EvaluationResult:
    """Everything an evaluation found: metrics, score, grade, findings, and the input error.

    Built by :func:`reduce` at the end of the stream. For a streamed file the trace's calls
    are not kept (``trace_calls`` is None), so ``to_dict()["calls"]["actual"]`` is empty while
    ``trace_calls_count`` still counts them.

    Args:
        metrics: the metrics, in Toolscore's key order.
        weights: normalized weights (see :func:`normalize_weights`).
        gold_calls: the expected calls.
        trace_calls: the trace's calls when they were kept, else None.
        trace_calls_count: how many trace calls were read.
        findings: the findings, in call order.
        input_error: the input error that ended reading early, if any.
        finding_counts: every finding counted by ``(check, kind, tool, rule)``, when known.
        failed_tools: ``(tool, failures)`` by most failures, ties in first-failure order.
        input_findings: the readers' findings (a malformed line, an item of the wrong shape),
            the first ones.
        input_problems: how many of the readers' findings were errors (input skipped).
        has_gold: False for a checks-only evaluation (no gold given): the record's score and
            grade are then ``null`` and :meth:`verdict` has no score or pass.
    """

    DEFAULT_WEIGHTS: ClassVar[dict[str, float]] = dict(DEFAULT_WEIGHTS)
    RECORD_SCHEMA_VERSION: ClassVar[str] = RECORD_SCHEMA_VERSION

    def __init__(
        self,
        metrics: dict[str, Any],
        weights: dict[str, float],
        gold_calls: list[ToolCall],
        trace_calls: list[ToolCall] | None,
        trace_calls_count: int,
        findings: Sequence[Finding] = (),
        input_error: InputError | None = None,
        failed_tools: Sequence[tuple[str, int]] = (),
        input_findings: Sequence[Finding] = (),
        input_problems: int = 0,
        has_gold: bool = True,
        criterion: PassCriterion | None = None,
        finding_counts: Mapping[FindingCountKey, int] | None = None,
        failed_calls: AbstractSet[int] | None = None,
    ) -> None:
        self.metrics = metrics
        self.has_gold = has_gold
        self.criterion = criterion
        """The pass rule the result was evaluated under (``pass_rule=``), which
        :meth:`verdict` applies by default; None: the default rule."""
        """False when no gold was given: the checks ran, but there is nothing to score."""
        self._weights = dict(weights)
        self.gold_calls = gold_calls
        self.trace_calls = trace_calls
        self.trace_calls_count = trace_calls_count
        self._findings = list(findings)
        self._input_error = input_error
        self.failed_tools = list(failed_tools)
        self._failed_calls = failed_calls
        """The positions in :attr:`trace_calls` of the calls that failed by the run's rules
        (their records' ``is_error``); None: by the default rules."""
        self.input_findings = list(input_findings)
        """The readers' findings, the first ones (see :attr:`input_problems`)."""
        self.finding_counts = None if finding_counts is None else dict(finding_counts)
        """Every finding (kept in :attr:`findings` or not) counted by ``(check, kind, tool,
        rule)``; None when not counted (then only the kept findings are known)."""
        self.input_problems = input_problems
        """How many parts of the trace were skipped as unreadable (a malformed JSON line, an
        item that is not a call of the format), counted over the whole trace."""

    def __repr__(self) -> str:
        state = "" if self.complete else ", incomplete"
        return f"<EvaluationResult score={self.score!r} grade={self.grade!r}{state}>"

    @property
    def weights(self) -> dict[str, float]:
        """The weights the score uses."""
        return dict(self._weights)

    @property
    def score(self) -> float:
        """The weighted composite score (see :func:`compute_score`)."""
        return compute_score(self.metrics, self._weights)

    @property
    def grade(self) -> str:
        """The score's letter grade, ``A`` to ``F``."""
        return letter_grade(self.score)

    def verdict(self, criterion: PassCriterion | None = None) -> Verdict:
        """The verdict (score, grade, violations by kind, pass): :func:`toolscore.verdict.judge`."""
        return judge(self, criterion)

    @property
    def selection_accuracy(self) -> float:
        return float(self.metrics.get("selection_accuracy", 0.0))

    @property
    def argument_f1(self) -> float:
        return float((self.metrics.get("argument_metrics") or {}).get("f1", 0.0))

    @property
    def sequence_accuracy(self) -> float:
        return float((self.metrics.get("sequence_metrics") or {}).get("sequence_accuracy", 0.0))

    @property
    def required_call_recall(self) -> float | None:
        """Share of required calls with their own successful call; None if none required."""
        value = self.metrics.get("required_call_recall")
        return None if value is None else float(value)

    @property
    def policy_violations(self) -> list[dict[str, Any]]:
        """Forbidden-rule violations, in trace order (empty without rules)."""
        violations = (self.metrics.get("policy_metrics") or {}).get("violations")
        return list(violations) if violations else []

    @property
    def rule_violations(self) -> list[dict[str, Any]]:
        """Hard-rule violations (allowlist, order, counts, step budget, schemas, data flow,
        match modes), in trace order, those found at the end last; empty without hard rules.
        Each is ``{"rule", "kind", "index", "tool", "path", "message"}``."""
        violations = (self.metrics.get("rule_metrics") or {}).get("violations")
        return list(violations) if violations else []

    @property
    def match_verdicts(self) -> dict[str, bool]:
        """The trajectory match modes asked for, each ``True`` when the trace passed it."""
        match = (self.metrics.get("rule_metrics") or {}).get("match") or {}
        return {mode: bool(v.get("passed")) for mode, v in match.items()}

    @property
    def findings(self) -> list[Finding]:
        """Every finding kept, in call order."""
        return list(self._findings)

    @property
    def input_error(self) -> InputError | None:
        """The error that stopped reading the trace early, or None."""
        return self._input_error

    @property
    def notes(self) -> list[str]:
        """Things the reader should know that are neither findings nor metrics: gold-file
        ``side_effects``, checked or not (see :func:`toolscore.gold.side_effect_note`)."""
        note = side_effect_note(self.gold_calls, self.metrics.get("side_effect_metrics"))
        return [] if note is None else [note]

    @property
    def complete(self) -> bool:
        """False when the trace could not be read to its end."""
        return self._input_error is None

    def to_dict(self) -> dict[str, Any]:
        """The JSON record (Toolscore's ``schema_version`` 2 layout), strict-JSON safe.

        Three additions: when reading stopped at an input error, a top-level ``"incomplete"``
        key holds the error (``type``, ``path``, ``line``, ``offset``, ``message``); when parts
        of the trace were skipped as unreadable, ``"input_problems"`` counts them; ``"notes"``
        lists :attr:`notes` when there are any.
        """
        failed = self._failed_calls
        actual = [
            call_record(c, None if failed is None else i in failed)
            for i, c in enumerate(self.trace_calls or ())
        ]
        record: dict[str, Any] = {
            "schema_version": RECORD_SCHEMA_VERSION,
            "score": json_safe(self.score) if self.has_gold else None,
            "grade": self.grade if self.has_gold else None,
            "weights": json_safe(self._weights),
            "required_call_recall": json_safe(self.required_call_recall),
            "metrics": json_safe(self.metrics),
            "calls": {
                "expected": [expected_record(g) for g in self.gold_calls],
                "actual": actual,
            },
            "gold_calls_count": len(self.gold_calls),
            "trace_calls_count": self.trace_calls_count,
        }
        if self._input_error is not None:
            record["incomplete"] = json_safe(self._input_error.to_json())
        if self.input_problems:
            record["input_problems"] = self.input_problems
        notes = self.notes
        if notes:
            record["notes"] = notes
        return record

    def behavior_findings(self) -> list[tuple[str, str]]:
        """Toolscore's "Behavior and safety" lines as ``(severity, message)`` pairs.

        Policy violations, hard-rule violations, the match modes passed (``info``), then
        credentials and personal data (with ``pii=``), then the failed-calls and retry
        warnings, then the findings of the user's checks (those kept). Call numbers are 1-based.
        """
        metrics = self.metrics
        out: list[tuple[str, str]] = []
        for v in self.policy_violations:
            reason = f": {v['reason']}" if v.get("reason") else ""
            if v.get("undecided"):
                reason = f" (undecided: its pattern took too long, counted as a match){reason}"
            out.append(
                (
                    "error",
                    f"call {v['index'] + 1} {v['tool']} matches forbidden rule "
                    f"{v['rule'] + 1}{reason}",
                )
            )
        out.extend(("error", str(v["message"])) for v in self.rule_violations)
        out.extend(
            ("info", f"trajectory match ({mode}) passed")
            for mode, passed in self.match_verdicts.items()
            if passed
        )
        for s in (metrics.get("security_metrics") or {}).get("secrets") or []:
            out.append(
                (
                    "error",
                    f"call {s['index'] + 1} {s['tool']} passes a credential ({s['kind']}) "
                    f"in '{s['path']}': {s['preview']}",
                )
            )
        for s in (metrics.get("security_metrics") or {}).get("pii") or []:  # with pii=
            out.append(
                (
                    "error",
                    f"call {s['index'] + 1} {s['tool']} passes personal data ({s['kind']}) "
                    f"in '{s['path']}': {s['preview']}",
                )
            )
        efficiency = metrics.get("efficiency_metrics") or {}
        errors = efficiency.get("error_count", 0)
        if errors:
            failed = self.failed_tools
            tools = join_capped(
                (f"{tool} x{count}" if count > 1 else tool for tool, count in failed), len(failed)
            )
            total = efficiency.get("total_calls", self.trace_calls_count)
            out.append(("warning", f"{errors} of {total} tool calls failed ({tools})"))
        retries = efficiency.get("retry_after_error_count", 0)
        if retries:
            noun = "call repeats" if retries == 1 else "calls repeat"
            out.append(("warning", f"{retries} {noun} a failed call with the same arguments"))
        # the user's own checks' findings (``checks=[...]``), as they said them
        out.extend(
            (f.severity, f.message) for f in self._findings if f.check not in BUILT_IN_CHECKS
        )
        return out


def _efficiency(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for part in parts:
        merged.update(part)
    out = {key: merged.pop(key, default) for key, default in EFFICIENCY_KEYS}
    out.update(merged)
    return out


EXTRA_KEYS = ("latency_metrics", "cost_metrics")
"""Metrics only file traces get (``include_extras``), as Toolscore's ``evaluate_trace``."""

BUILT_IN_CHECKS = frozenset({"expected", "errors", "secrets", "policy", "rules", "input"})
"""The checks whose findings the reports show through the metrics (or apart: ``input``)."""

_AFTER_EXPECTED = (
    "required_call_recall",
    "security_metrics",
    "policy_metrics",
    "rule_metrics",
)


def reduce(
    states: Sequence[State | None],
    *,
    weights: Mapping[str, float],
    gold: list[ToolCall],
    trace_calls: list[ToolCall] | None,
    trace_calls_count: int,
    findings: Sequence[Finding] = (),
    finding_counts: Mapping[FindingCountKey, int] | None = None,
    failed_calls: AbstractSet[int] | None = None,
    input_error: InputError | None = None,
    input_findings: Sequence[Finding] = (),
    input_problems: int = 0,
    include_extras: bool = False,
    has_gold: bool = True,
    score_only: bool = False,
    criterion: PassCriterion | None = None,
) -> EvaluationResult:
    """Merge the checks' states into one result, in Toolscore's key order.

    Each state gives its part of the metrics (:meth:`~toolscore.checks._base.State.metrics`);
    no check is asked by name. The keys are laid out in Toolscore's order (the gold-based
    metrics, ``efficiency_metrics``, ``required_call_recall``, ``security_metrics``,
    ``policy_metrics``), then any other key a state gives, then :data:`EXTRA_KEYS` when
    ``include_extras``. A key two states give is the first one's, except
    ``efficiency_metrics``, whose keys are merged; it always has its eight keys. A state with
    ``failed_tools`` (the errors check's) gives the result's.

    Args:
        states: the checks' states (None: a check with no state).
        weights: normalized weights.
        gold: the expected calls.
        trace_calls: the kept trace calls, or None.
        failed_calls: the positions in ``trace_calls`` of the calls that failed by the run's
            rules (None: by the default rules, each call's ``is_error``).
        trace_calls_count: how many trace calls were read.
        findings: the findings kept by the pipeline.
        finding_counts: every finding counted by key (the pipeline's
            :attr:`~toolscore.pipeline.Pipeline.finding_counts`), when known.
        input_error: the error that ended reading, if any.
        input_findings, input_problems: the readers' findings kept, and their errors counted.
        include_extras: add ``latency_metrics``/``cost_metrics`` (file traces, as
            Toolscore's ``evaluate_trace``).
        has_gold: False for a checks-only evaluation (see :class:`EvaluationResult`).
        criterion: the pass rule the verdict applies (see :class:`EvaluationResult`).
        score_only: ask each state for its :meth:`~toolscore.checks._base.State.score_metrics`
            only: what the score, the verdict, a live score and a dataset's record read.
    """
    given: dict[str, Any] = {}
    efficiency: list[Mapping[str, Any]] = []
    failed: Sequence[tuple[str, int]] = ()
    for state in states:
        if state is None:
            continue
        part = state.score_metrics() if score_only else state.metrics()
        for key, value in part.items():
            if key == "efficiency_metrics":
                efficiency.append(value or {})
            else:
                given.setdefault(key, value)
        if not failed:
            failed = getattr(state, "failed_tools", None) or ()
    metrics: dict[str, Any] = {key: given.pop(key) for key in _EXPECTED_KEYS if key in given}
    metrics["efficiency_metrics"] = _efficiency(efficiency)
    for key in _AFTER_EXPECTED:
        if key in given:
            metrics[key] = given.pop(key)
    extras = {key: given.pop(key) for key in EXTRA_KEYS if key in given}
    metrics.update(given)
    if include_extras:
        metrics.update(extras)
    return EvaluationResult(
        metrics,
        dict(weights),
        gold,
        trace_calls,
        trace_calls_count,
        findings=findings,
        input_error=input_error,
        failed_tools=failed,
        input_findings=input_findings,
        input_problems=input_problems,
        has_gold=has_gold,
        criterion=criterion,
        finding_counts=finding_counts,
        failed_calls=failed_calls,
    )
