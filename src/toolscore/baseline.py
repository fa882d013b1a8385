"""Baselines: keep what a run scored and found, and fail a later run that is worse.

A baseline holds one small summary per trace (:class:`TraceSummary`) plus an aggregate over
all of them. ``toolscore eval ... --save-baseline FILE`` writes one; ``--baseline FILE``
compares the run with it (:func:`compare`) and fails (exit 1) on a *regression*:

- a trace's score (or, for several traces, the mean score) dropped by more than the tolerance
  (``--baseline-tolerance``, an absolute amount of score: 0.05 is five points; default 0);
- fewer required calls were completed (a required call stopped being made, or now fails);
- a finding that the baseline did not have appeared, or one it had became more frequent.
  Findings are compared by :func:`finding_key` (check, kind, tool, and the rule for forbidden
  calls), never by message text, so rewording a message or moving a call does not count;
- a trace of the baseline was not evaluated, or could no longer be read to its end.

The file is JSON written for diffs: keys sorted, one trace per line::

    {
    "aggregate": {"findings": {...}, "mean_score": 0.74, "required": [1, 2], ...},
    "format": "toolscore-baseline",
    "traces": {
    "examples/guardrails/trace.json": {"calls": 5, "complete": true, "findings": {...}, ...}
    },
    "version": 1
    }

For a dataset (many traces), build a :class:`TraceSummary` per trace with :func:`summarize`
and pass the mapping ``trace_id -> summary`` to :func:`write_baseline` and :func:`compare`;
nothing here reads a trace, so memory is one small record per trace.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import InputError

__all__ = [
    "BASELINE_FORMAT",
    "BASELINE_VERSION",
    "Baseline",
    "Comparison",
    "Regression",
    "TraceSummary",
    "aggregate",
    "compare",
    "dumps_baseline",
    "finding_key",
    "load_baseline",
    "summaries_of",
    "summarize",
    "write_baseline",
]

BASELINE_FORMAT = "toolscore-baseline"
BASELINE_VERSION = 1
_EPSILON = 1e-9  # a score equal to the baseline's within float noise is not a drop


@dataclass(frozen=True, slots=True)
class TraceSummary:
    """What a baseline keeps of one trace's evaluation."""

    score: float
    grade: str
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
            "score": _finite(self.score),
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
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                raise TypeError("score must be a number")
            if not isinstance(grade, str):
                raise TypeError("grade must be a string")
            if required is not None and not (
                isinstance(required, list)
                and len(required) == 2
                and all(isinstance(n, int) and not isinstance(n, bool) for n in required)
            ):
                raise TypeError("required must be [completed, total] or null")
            if not isinstance(findings, dict) or not all(
                isinstance(n, int) and not isinstance(n, bool) for n in findings.values()
            ):
                raise TypeError("findings must map keys to counts")
            missing = data.get("missing_tools") or []
            if not isinstance(missing, list):
                raise TypeError("missing_tools must be a list")
            return TraceSummary(
                score=float(score),
                grade=grade,
                required=None if required is None else (required[0], required[1]),
                missing_tools=tuple(str(t) for t in missing),
                findings={str(k): v for k, v in findings.items()},
                calls=int(data.get("calls") or 0),
                complete=bool(data.get("complete", True)),
            )
        except KeyError as exc:
            raise ValueError(f"{where}: missing {exc.args[0]!r}") from None
        except TypeError as exc:
            raise ValueError(f"{where}: {exc}") from None


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def finding_key(finding: Any, rule: int | None = None) -> str:
    """The identity of a finding for baselines: ``check:kind:tool``, plus ``:rule N``
    (1-based) for a forbidden call. Messages, call numbers and lines are not part of it.

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
    return key


def summarize(result: Any) -> TraceSummary:
    """The baseline summary of one evaluation result (an ``EvaluationResult``).

    Findings are counted over those the result keeps (every one up to 10,000, the readers'
    findings about unreadable input among them).
    """
    rules: dict[int, int] = {}
    for violation in getattr(result, "policy_violations", ()) or ():
        index, rule = violation.get("index"), violation.get("rule")
        if isinstance(index, int) and isinstance(rule, int):
            rules.setdefault(index, rule)
    counts: dict[str, int] = {}
    for finding in result.findings:  # the readers' findings are among them
        rule = rules.get(finding.call_index) if finding.kind == "forbidden_call" else None
        key = finding_key(finding, rule)
        counts[key] = counts.get(key, 0) + 1
    recall = result.required_call_recall
    total = len(result.gold_calls)
    required = None if recall is None else (round(recall * total), total)
    correctness = result.metrics.get("tool_correctness_metrics") or {}
    missing = tuple(sorted(str(t) for t in correctness.get("missing_tools") or ()))
    return TraceSummary(
        score=float(result.score),
        grade=str(result.grade),
        required=required,
        missing_tools=missing,
        findings=dict(sorted(counts.items())),
        calls=int(result.trace_calls_count),
        complete=getattr(result, "input_error", None) is None,
    )


def aggregate(summaries: Mapping[str, TraceSummary]) -> dict[str, Any]:
    """The aggregate over traces: count, mean and lowest score, required calls completed
    (summed), findings (summed by key), traces not read to their end."""
    items = list(summaries.values())
    scores = [s.score for s in items if math.isfinite(s.score)]
    done = total = 0
    findings: dict[str, int] = {}
    for s in items:
        if s.required is not None:
            done += s.required[0]
            total += s.required[1]
        for key, n in s.findings.items():
            findings[key] = findings.get(key, 0) + n
    return {
        "findings": dict(sorted(findings.items())),
        "incomplete": sum(1 for s in items if not s.complete),
        "mean_score": math.fsum(scores) / len(scores) if scores else None,
        "min_score": min(scores) if scores else None,
        "required": [done, total],
        "traces": len(items),
    }


def _line(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)


def dumps_baseline(summaries: Mapping[str, TraceSummary]) -> str:
    """The baseline file's text for ``trace_id -> summary``: sorted keys, one trace a line."""
    lines = [
        "{",
        f'"aggregate": {_line(aggregate(summaries))},',
        f'"format": {_line(BASELINE_FORMAT)},',
    ]
    entries = sorted(summaries.items())
    if entries:
        lines.append('"traces": {')
        for i, (trace_id, summary) in enumerate(entries):
            comma = "," if i < len(entries) - 1 else ""
            lines.append(f"{_line(str(trace_id))}: {_line(summary.to_json())}{comma}")
        lines.append("},")
    else:
        lines.append('"traces": {},')
    lines.append(f'"version": {BASELINE_VERSION}')
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_baseline(path: str | os.PathLike[str], summaries: Mapping[str, TraceSummary]) -> None:
    """Write the baseline of ``trace_id -> summary`` to ``path``, as every report is written
    (:func:`toolscore.outputs.write_report`: atomically, through a device or FIFO).

    Raises:
        OSError: the file cannot be written (naming ``path``).
    """
    from .outputs import write_report

    write_report(path, dumps_baseline(summaries).encode("utf-8"))


@dataclass(frozen=True, slots=True)
class Baseline:
    """A baseline file as read: the per-trace summaries (its aggregate is recomputed)."""

    traces: dict[str, TraceSummary]
    path: str = "<baseline>"


def load_baseline(path: str | os.PathLike[str]) -> Baseline:
    """Read a baseline file written by :func:`write_baseline`.

    Raises:
        InputError: the file is missing, not JSON, or not a toolscore baseline (of this
            version); the message names the file and the entry.
    """
    name = os.fspath(path)
    try:
        with open(name, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise InputError(name, "baseline file not found") from None
    except OSError as exc:
        raise InputError(name, f"cannot read the baseline: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise InputError(name, "invalid UTF-8", offset=exc.start) from None
    except json.JSONDecodeError as exc:
        raise InputError(
            name, f"invalid JSON: {exc.msg}", line=exc.lineno, offset=exc.pos
        ) from None
    if not isinstance(data, dict) or data.get("format") != BASELINE_FORMAT:
        raise InputError(name, f'not a toolscore baseline (no "format": "{BASELINE_FORMAT}")')
    if data.get("version") != BASELINE_VERSION:
        raise InputError(
            name, f"baseline version {data.get('version')!r}; this toolscore reads version 1"
        )
    traces = data.get("traces")
    if not isinstance(traces, dict):
        raise InputError(name, '"traces" must be an object')
    out: dict[str, TraceSummary] = {}
    for trace_id, entry in traces.items():
        try:
            out[trace_id] = TraceSummary.from_json(entry, f"trace {trace_id!r}")
        except ValueError as exc:
            raise InputError(name, str(exc)) from None
    return Baseline(out, name)


@dataclass(frozen=True, slots=True)
class Regression:
    """One way a run is worse than its baseline."""

    trace_id: str | None
    """The trace, or ``None`` for the aggregate over all traces."""
    kind: str
    """``score``, ``required``, ``finding``, ``missing_trace`` or ``incomplete``."""
    message: str
    key: str | None = None
    """The :func:`finding_key`, for ``finding``."""

    def __str__(self) -> str:
        where = "all traces" if self.trace_id is None else self.trace_id
        return f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class Comparison:
    """The outcome of :func:`compare`."""

    regressions: list[Regression]
    improvements: list[str]
    """Lines about what got better (a higher score, a finding gone)."""
    notes: list[str]
    """Lines that do not fail the run (traces new since the baseline...)."""
    tolerance: float

    @property
    def passed(self) -> bool:
        """True when there is no regression."""
        return not self.regressions

    def lines(self) -> list[str]:
        """Human-readable lines: the verdict, then each regression, improvement and note."""
        if self.passed:
            head = f"PASS no regression against the baseline (tolerance {self.tolerance:g})"
        else:
            n = len(self.regressions)
            head = (
                f"FAIL {n} regression{'s' if n != 1 else ''} against the baseline "
                f"(tolerance {self.tolerance:g})"
            )
        out = [head]
        out.extend(f"  REGRESSION {r}" for r in self.regressions)
        out.extend(f"  improved   {line}" for line in self.improvements)
        out.extend(f"  note       {line}" for line in self.notes)
        return out


def _pairs(
    baseline: Mapping[str, TraceSummary], current: Mapping[str, TraceSummary]
) -> tuple[list[tuple[str, TraceSummary, TraceSummary]], list[str], list[str], list[str]]:
    if len(baseline) == 1 and len(current) == 1:
        ((old_id, before),) = baseline.items()
        ((new_id, after),) = current.items()
        notes = [] if old_id == new_id else [f"compared {new_id} with baseline trace {old_id}"]
        return [(new_id, before, after)], [], [], notes
    pairs = [(tid, baseline[tid], s) for tid, s in sorted(current.items()) if tid in baseline]
    gone = sorted(tid for tid in baseline if tid not in current)
    new = sorted(tid for tid in current if tid not in baseline)
    return pairs, gone, new, []


def _score(
    trace_id: str | None,
    old: float | None,
    new: float | None,
    tolerance: float,
    regressions: list[Regression],
    improvements: list[str],
) -> None:
    if old is None or new is None:
        return
    where = "all traces" if trace_id is None else trace_id
    what = "mean score" if trace_id is None else "score"
    if new < old - tolerance - _EPSILON:
        text = f"{what} {new:.4f} < baseline {old:.4f} ({new - old:+.4f})"
        regressions.append(Regression(trace_id, "score", text))
    elif new > old + _EPSILON:
        improvements.append(f"{where}: {what} {new:.4f} > baseline {old:.4f} ({new - old:+.4f})")


def _findings(
    trace_id: str | None,
    old: Mapping[str, int],
    new: Mapping[str, int],
    regressions: list[Regression],
    improvements: list[str],
) -> None:
    where = "all traces" if trace_id is None else trace_id
    for key in sorted(set(old) | set(new)):
        before, after = old.get(key, 0), new.get(key, 0)
        if after > before:
            what = "new finding" if before == 0 else "more findings"
            regressions.append(
                Regression(trace_id, "finding", f"{what} {key} ({after}, baseline {before})", key)
            )
        elif after < before:
            improvements.append(f"{where}: fewer findings {key} ({after}, baseline {before})")


def _required(
    trace_id: str | None,
    old: TraceSummary | tuple[int, int] | None,
    new: TraceSummary | tuple[int, int] | None,
    regressions: list[Regression],
) -> None:
    old_req = old.required if isinstance(old, TraceSummary) else old
    new_req = new.required if isinstance(new, TraceSummary) else new
    if old_req is None or new_req is None:
        return
    if new_req[0] < old_req[0]:
        message = (
            f"required calls completed {new_req[0]} of {new_req[1]} "
            f"(baseline {old_req[0]} of {old_req[1]})"
        )
        if isinstance(old, TraceSummary) and isinstance(new, TraceSummary):
            stopped = sorted(set(new.missing_tools) - set(old.missing_tools))
            if stopped:
                message += f"; no longer called: {', '.join(stopped)}"
        regressions.append(Regression(trace_id, "required", message))


def compare(
    baseline: Baseline | Mapping[str, TraceSummary],
    current: Mapping[str, TraceSummary],
    tolerance: float = 0.0,
) -> Comparison:
    """Compare a run (``trace_id -> summary``) with a baseline; see the module docstring.

    Traces are matched by id; when both sides hold exactly one trace they are compared
    whatever their ids (a single trace evaluated from another path). With more than one
    trace the aggregate is compared too (mean score, required calls, findings by key).

    Args:
        baseline: the loaded baseline, or its ``trace_id -> summary`` mapping.
        current: this run's summaries.
        tolerance: how far (absolute score, 0-1) a score may drop before it is a regression.

    Raises:
        ValueError: ``tolerance`` is negative or not finite.
    """
    if not math.isfinite(tolerance) or tolerance < 0:
        raise ValueError(f"the baseline tolerance must be a number >= 0, got {tolerance}")
    old_traces = baseline.traces if isinstance(baseline, Baseline) else dict(baseline)
    regressions: list[Regression] = []
    improvements: list[str] = []
    pairs, gone, new, notes = _pairs(old_traces, current)
    for trace_id in gone:
        regressions.append(
            Regression(trace_id, "missing_trace", "in the baseline but not evaluated in this run")
        )
    for trace_id, old, cur in pairs:
        if old.complete and not cur.complete:
            regressions.append(
                Regression(trace_id, "incomplete", "could not be read to its end this time")
            )
        _score(trace_id, old.score, cur.score, tolerance, regressions, improvements)
        _required(trace_id, old, cur, regressions)
        _findings(trace_id, old.findings, cur.findings, regressions, improvements)
    if new:
        shown = ", ".join(new[:5]) + (f" and {len(new) - 5} more" if len(new) > 5 else "")
        notes.append(f"{len(new)} trace(s) not in the baseline: {shown}")
    if len(old_traces) > 1 or len(current) > 1:
        before, after = aggregate(old_traces), aggregate(current)
        _score(None, before["mean_score"], after["mean_score"], tolerance, regressions, [])
        old_req, new_req = before["required"], after["required"]
        if not gone and not new:
            _required(None, (old_req[0], old_req[1]), (new_req[0], new_req[1]), regressions)
    return Comparison(regressions, improvements, notes, tolerance)


def summaries_of(results: Iterable[tuple[str, Any]]) -> dict[str, TraceSummary]:
    """``trace_id -> summary`` for ``(trace_id, result)`` pairs (a helper for datasets)."""
    return {trace_id: summarize(result) for trace_id, result in results}
