"""What a baseline keeps: one small summary per trace (:class:`TraceSummary`), made from an
evaluation result (:func:`summarize`), and the aggregate over all of them
(:class:`AggregateBuilder`). The file and the comparison are described in
:mod:`toolscore.baseline`."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ._exact import ExactAdder
from .redact import redact_secrets


def baseline_name(text: str) -> str:
    """``text`` as a baseline stores it: as it is, unless it holds a credential (a trace id or
    a tool name made of a key, a finding key naming such a tool); then redacted, followed by
    ``#`` and 16 hex digits of its SHA-256, so that two names differing only inside a key stay
    two, and a run's name matches the baseline's when (and only when) the raw text is the
    same. Idempotent (a redacted text holds no credential), so it is applied on every way in
    and out: summaries made, files read and written, runs compared."""
    shown = redact_secrets(text)
    if shown == text:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{shown} #{digest}"


@dataclass(frozen=True, slots=True)
class TraceSummary:
    """What a baseline keeps of one trace's evaluation."""

    score: float | None
    """The score; ``None`` for a checks-only evaluation (no gold: nothing to score)."""
    grade: str | None
    required: tuple[int, int] | None
    """``(completed, required)`` calls, or ``None`` when the gold expects no call."""
    missing_tools: tuple[str, ...] = ()
    """Gold tools the trace never called (sorted)."""
    findings: Mapping[str, int] = field(default_factory=dict)
    """:func:`finding_key` -> how many findings of that key."""
    calls: int = 0
    """Calls read from the trace."""
    complete: bool = True
    """False when reading stopped at an input error."""

    def to_json(self) -> dict[str, Any]:
        """The summary as the baseline file stores it."""
        return {
            "calls": self.calls,
            "complete": self.complete,
            "findings": dict(sorted(self.findings.items())),
            "grade": self.grade,
            "missing_tools": list(self.missing_tools),
            "required": None if self.required is None else list(self.required),
            "score": None if self.score is None else _finite(self.score),
        }

    @staticmethod
    def from_json(data: Any, where: str) -> TraceSummary:
        """Read a summary written by :meth:`to_json`.

        Raises:
            ValueError: a field is missing or of the wrong type (``where`` names the entry).
        """
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected an object")
        try:
            score = data["score"]
            grade = data["grade"]
            required = data.get("required")
            findings = data.get("findings") or {}
            if score is not None and (
                isinstance(score, bool) or not isinstance(score, (int, float))
            ):
                raise TypeError("score must be a number or null (checks only)")
            if grade is not None and not isinstance(grade, str):
                raise TypeError("grade must be a string or null (checks only)")
            if required is not None and not (
                isinstance(required, list)
                and len(required) == 2
                and all(_count(n) for n in required)
                and required[0] <= required[1]
            ):
                raise TypeError("required must be [completed, total] (0 <= completed <= total)")
            if not isinstance(findings, dict):
                raise TypeError("findings must map keys to counts")
            for key, n in findings.items():
                if not _count(n):
                    raise TypeError(
                        f"the count of finding {baseline_name(str(key))!r} "
                        f"must be a whole number >= 0, not {n!r}"
                    )
            missing = data.get("missing_tools") or []
            if not isinstance(missing, list):
                raise TypeError("missing_tools must be a list")
            if not _count(data.get("calls") or 0):
                raise TypeError("calls must be a whole number >= 0")
            return TraceSummary(
                score=None if score is None else float(score),
                grade=grade,
                required=None if required is None else (required[0], required[1]),
                missing_tools=tuple(baseline_name(str(t)) for t in missing),
                findings={baseline_name(str(k)): v for k, v in findings.items()},
                calls=int(data.get("calls") or 0),
                complete=bool(data.get("complete", True)),
            )
        except KeyError as exc:
            raise ValueError(f"{where}: missing {exc.args[0]!r}") from None
        except TypeError as exc:
            raise ValueError(f"{where}: {exc}") from None


def _count(value: Any) -> bool:
    """Whether ``value`` is a count: an int (no bool) of at least 0."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def finding_key(finding: Any, rule: int | None = None) -> str:
    """The identity of a finding for baselines: ``check:kind:tool``, plus ``:rule N``
    (1-based) for a forbidden call. Messages, call numbers and lines are not part of it; a
    key holding a credential (in the tool name) is stored as :func:`baseline_name` gives it.

    Args:
        finding: a :class:`~toolscore.calls.Finding` (or any object with ``check``, ``kind``,
            ``tool`` and, optionally, ``rule``).
        rule: the 0-based index of the forbidden rule, when the finding does not carry it.
    """
    rule_index = getattr(finding, "rule", None)
    if rule_index is None:
        rule_index = rule
    key = f"{finding.check}:{finding.kind}:{finding.tool or '-'}"
    if isinstance(rule_index, int) and not isinstance(rule_index, bool):
        key += f":rule {rule_index + 1}"
    return baseline_name(key)


class _Key(NamedTuple):
    """A counted finding's key fields, as :func:`finding_key` reads them."""

    check: str
    kind: str
    tool: str | None
    rule: int | None


def summarize(result: Any, scored: bool | None = None) -> TraceSummary:
    """The baseline summary of one evaluation result (an ``EvaluationResult``); ``scored``
    False (default: the result's ``has_gold``) keeps no score and no grade (checks only).

    Findings are counted exactly, kept or not (:attr:`EvaluationResult.finding_counts`);
    for a result that did not count them, over those it keeps (the first 10,000).
    """
    if scored is None:
        scored = bool(getattr(result, "has_gold", True))
    counts: dict[str, int] = {}
    counted = getattr(result, "finding_counts", None)
    if counted is not None:
        for (check, kind, tool, rule), n in counted.items():
            key = finding_key(_Key(check, kind, tool, rule))
            counts[key] = counts.get(key, 0) + n
    else:
        rules: dict[int, int] = {}
        for violation in getattr(result, "policy_violations", ()) or ():
            index, rule = violation.get("index"), violation.get("rule")
            if isinstance(index, int) and isinstance(rule, int):
                rules.setdefault(index, rule)
        for finding in result.findings:  # the readers' findings are among them
            rule = rules.get(finding.call_index) if finding.kind == "forbidden_call" else None
            key = finding_key(finding, rule)
            counts[key] = counts.get(key, 0) + 1
    recall = result.required_call_recall
    total = len(result.gold_calls)
    required = None if recall is None else (round(recall * total), total)
    correctness = result.metrics.get("tool_correctness_metrics") or {}
    missing = tuple(sorted(baseline_name(str(t)) for t in correctness.get("missing_tools") or ()))
    return TraceSummary(
        score=float(result.score) if scored else None,
        grade=str(result.grade) if scored else None,
        required=required,
        missing_tools=missing,
        findings=dict(sorted(counts.items())),
        calls=int(result.trace_calls_count),
        complete=getattr(result, "input_error", None) is None,
    )


class AggregateBuilder:
    """:func:`aggregate` built one summary at a time (memory: the findings' keys only)."""

    def __init__(self) -> None:
        self.traces = 0
        self.incomplete = 0
        self.done = 0
        self.total = 0
        self.findings: dict[str, int] = {}
        self._sum = ExactAdder()
        self._scored = 0
        self._min: float | None = None

    def add(self, summary: TraceSummary) -> None:
        """Count one trace's summary."""
        self.traces += 1
        if not summary.complete:
            self.incomplete += 1
        score = summary.score
        if score is not None and math.isfinite(score):
            self._scored += 1
            self._min = score if self._min is None else min(self._min, score)
            self._sum.add(score)
        if summary.required is not None:
            self.done += summary.required[0]
            self.total += summary.required[1]
        for key, n in summary.findings.items():
            self.findings[key] = self.findings.get(key, 0) + n

    def result(self) -> dict[str, Any]:
        """The aggregate, as :func:`aggregate` gives it."""
        return {
            "findings": dict(sorted(self.findings.items())),
            "incomplete": self.incomplete,
            "mean_score": self._sum.total().value() / self._scored if self._scored else None,
            "min_score": self._min,
            "required": [self.done, self.total],
            "traces": self.traces,
        }


def aggregate(summaries: Mapping[str, TraceSummary]) -> dict[str, Any]:
    """The aggregate over traces: count, mean and lowest score, required calls completed
    (summed), findings (summed by key), traces not read to their end."""
    builder = AggregateBuilder()
    for summary in summaries.values():
        builder.add(summary)
    return builder.result()


def summaries_of(results: Iterable[tuple[str, Any]]) -> dict[str, TraceSummary]:
    """``trace_id -> summary`` for ``(trace_id, result)`` pairs (a helper for datasets)."""
    return {trace_id: summarize(result) for trace_id, result in results}
