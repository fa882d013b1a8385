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
nothing here reads a trace, so memory is one small record per trace. For more traces than
memory should hold, the streaming forms do the same one trace at a time:
:func:`iter_baseline` (read), :class:`AggregateBuilder`, :class:`Comparer` (compare, in
trace-id order) and :func:`write_baseline_entries` (write, entries sorted by id), as
``toolscore eval`` does on a dataset (:mod:`toolscore.dataset.ci`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._exact import ExactAdder
from .errors import InputError

__all__ = [
    "BASELINE_FORMAT",
    "BASELINE_VERSION",
    "MAX_LISTED",
    "AggregateBuilder",
    "Baseline",
    "Comparer",
    "Comparison",
    "Regression",
    "TraceSummary",
    "aggregate",
    "baseline_lines",
    "compare",
    "dumps_baseline",
    "finding_key",
    "iter_baseline",
    "load_baseline",
    "summaries_of",
    "summarize",
    "write_baseline",
    "write_baseline_entries",
]

MAX_LISTED = 1000
"""Regressions and improvements a :class:`Comparison` lists (all are counted)."""
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
        if math.isfinite(score):
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


def _line(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)


def baseline_lines(
    aggregate_data: Mapping[str, Any], entries: Iterable[tuple[str, TraceSummary]]
) -> Iterator[str]:
    """The baseline file's lines (each with its newline) for an aggregate and ``(trace_id,
    summary)`` entries **sorted by trace id**: the layout of the module docstring, produced
    one trace at a time (a dataset's baseline is written without holding its traces)."""
    yield "{\n"
    yield f'"aggregate": {_line(dict(aggregate_data))},\n'
    yield f'"format": {_line(BASELINE_FORMAT)},\n'
    previous: str | None = None
    for trace_id, summary in entries:
        if previous is None:
            yield '"traces": {\n'
        else:
            yield previous + ",\n"
        previous = f"{_line(str(trace_id))}: {_line(summary.to_json())}"
    if previous is None:
        yield '"traces": {},\n'
    else:
        yield previous + "\n},\n"
    yield f'"version": {BASELINE_VERSION}\n'
    yield "}\n"


def dumps_baseline(summaries: Mapping[str, TraceSummary]) -> str:
    """The baseline file's text for ``trace_id -> summary``: sorted keys, one trace a line."""
    return "".join(baseline_lines(aggregate(summaries), sorted(summaries.items())))


def write_baseline(path: str | os.PathLike[str], summaries: Mapping[str, TraceSummary]) -> None:
    """Write the baseline of ``trace_id -> summary`` to ``path``, as every report is written
    (:func:`toolscore.outputs.write_report`: atomically, through a device or FIFO).

    Raises:
        OSError: the file cannot be written (naming ``path``).
    """
    write_baseline_entries(path, aggregate(summaries), sorted(summaries.items()))


def write_baseline_entries(
    path: str | os.PathLike[str],
    aggregate_data: Mapping[str, Any],
    entries: Iterable[tuple[str, TraceSummary]],
) -> None:
    """Write a baseline from its aggregate and ``(trace_id, summary)`` entries sorted by id,
    streamed (see :func:`baseline_lines`), as :func:`write_baseline` writes it.

    Raises:
        OSError: the file cannot be written (naming ``path``).
    """
    from .outputs import write_report

    write_report(path, (line.encode("utf-8") for line in baseline_lines(aggregate_data, entries)))


@dataclass(frozen=True, slots=True)
class Baseline:
    """A baseline file as read: the per-trace summaries (its aggregate is recomputed)."""

    traces: dict[str, TraceSummary]
    path: str = "<baseline>"


def load_baseline(path: str | os.PathLike[str]) -> Baseline:
    """Read a baseline file written by :func:`write_baseline` (for a large one, stream its
    entries with :func:`iter_baseline`).

    Raises:
        InputError: the file is missing, not JSON, or not a toolscore baseline (of this
            version); the message names the file and the entry.
    """
    name = os.fspath(path)
    return Baseline(dict(iter_baseline(name)), name)


def iter_baseline(path: str | os.PathLike[str]) -> Iterator[tuple[str, TraceSummary]]:
    """The ``(trace_id, summary)`` entries of a baseline file, streamed (ijson): memory is
    one entry at a time, whatever the number of traces. The file is checked (JSON, format,
    version) before this returns; an entry that is not a summary raises as it is reached.

    Raises:
        InputError: as :func:`load_baseline`.
    """
    name = os.fspath(path)
    _check_header(name)
    return _entries(name)


def _open_baseline(name: str) -> Any:
    try:
        return open(name, "rb")
    except FileNotFoundError:
        raise InputError(name, "baseline file not found") from None
    except OSError as exc:
        raise InputError(name, f"cannot read the baseline: {exc.strerror}") from None


def _json_error(name: str, exc: Exception) -> InputError:
    if isinstance(exc, UnicodeDecodeError):
        return InputError(name, "invalid UTF-8", offset=exc.start)
    return InputError(name, f"invalid JSON: {exc}")


def _check_header(name: str) -> None:
    """The top level of the file: an object with the format, version and traces."""
    import ijson

    found: dict[str, Any] = {}
    with _open_baseline(name) as f:
        try:
            first = True
            for prefix, event, value in ijson.parse(f, use_float=True):
                if first:
                    first = False
                    if event != "start_map":
                        break
                if prefix in ("format", "version") and event not in ("map_key",):
                    found[prefix] = value
                elif prefix == "traces" and event in ("start_map", "start_array"):
                    found["traces"] = event
                elif prefix == "traces" and event not in ("map_key", "end_map", "end_array"):
                    found["traces"] = event
        except (ijson.JSONError, UnicodeDecodeError) as exc:
            raise _json_error(name, exc) from None
        except OSError as exc:
            raise InputError(name, f"cannot read the baseline: {exc.strerror}") from None
    if found.get("format") != BASELINE_FORMAT:
        raise InputError(name, f'not a toolscore baseline (no "format": "{BASELINE_FORMAT}")')
    if found.get("version") != BASELINE_VERSION:
        raise InputError(
            name, f"baseline version {found.get('version')!r}; this toolscore reads version 1"
        )
    if found.get("traces") != "start_map":
        raise InputError(name, '"traces" must be an object')


def _entries(name: str) -> Iterator[tuple[str, TraceSummary]]:
    import ijson

    with _open_baseline(name) as f:
        try:
            for trace_id, entry in ijson.kvitems(f, "traces", use_float=True):
                try:
                    yield trace_id, TraceSummary.from_json(entry, f"trace {trace_id!r}")
                except ValueError as exc:
                    raise InputError(name, str(exc)) from None
        except (ijson.JSONError, UnicodeDecodeError) as exc:
            raise _json_error(name, exc) from None


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
    regression_count: int | None = None
    """Every regression found (``regressions`` keeps the first :data:`MAX_LISTED`)."""
    improvement_count: int | None = None

    @property
    def passed(self) -> bool:
        """True when there is no regression."""
        return not self.regressions

    def lines(self) -> list[str]:
        """Human-readable lines: the verdict, then each regression, improvement and note."""
        if self.passed:
            head = f"PASS no regression against the baseline (tolerance {self.tolerance:g})"
        else:
            n = self.regression_count or len(self.regressions)
            head = (
                f"FAIL {n} regression{'s' if n != 1 else ''} against the baseline "
                f"(tolerance {self.tolerance:g})"
            )
        out = [head]
        out.extend(f"  REGRESSION {r}" for r in self.regressions)
        more = (self.regression_count or 0) - len(self.regressions)
        if more > 0:
            out.append(f"  REGRESSION ... and {more:,} more")
        out.extend(f"  improved   {line}" for line in self.improvements)
        more = (self.improvement_count or 0) - len(self.improvements)
        if more > 0:
            out.append(f"  improved   ... and {more:,} more")
        out.extend(f"  note       {line}" for line in self.notes)
        return out


class _Capped(list[Any]):
    """A list that keeps the first :data:`MAX_LISTED` items appended and counts them all."""

    def __init__(self) -> None:
        super().__init__()
        self.total = 0

    def append(self, item: Any) -> None:
        self.total += 1
        if len(self) < MAX_LISTED:
            super().append(item)


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


class Comparer:
    """:func:`compare` one trace at a time, for runs too large to hold (a dataset): feed it
    :meth:`gone`, :meth:`trace` and :meth:`new` in trace-id order, then :meth:`finish` with
    both aggregates (:class:`AggregateBuilder`). Memory: the first :data:`MAX_LISTED`
    regressions and improvements (all are counted) and the first five new trace ids.

    Raises:
        ValueError: ``tolerance`` is negative or not finite.
    """

    def __init__(self, tolerance: float = 0.0) -> None:
        if not math.isfinite(tolerance) or tolerance < 0:
            raise ValueError(f"the baseline tolerance must be a number >= 0, got {tolerance}")
        self.tolerance = tolerance
        self.regressions = _Capped()
        self.improvements = _Capped()
        self.notes: list[str] = []
        self._new: list[str] = []
        self._new_count = 0
        self._gone_count = 0

    def gone(self, trace_id: str) -> None:
        """A trace of the baseline that this run did not evaluate (a regression)."""
        self._gone_count += 1
        self.regressions.append(
            Regression(trace_id, "missing_trace", "in the baseline but not evaluated in this run")
        )

    def trace(self, trace_id: str, old: TraceSummary, cur: TraceSummary) -> None:
        """A trace in both: its score, required calls, findings, completeness."""
        if old.complete and not cur.complete:
            self.regressions.append(
                Regression(trace_id, "incomplete", "could not be read to its end this time")
            )
        _score(trace_id, old.score, cur.score, self.tolerance, self.regressions, self.improvements)
        _required(trace_id, old, cur, self.regressions)
        _findings(trace_id, old.findings, cur.findings, self.regressions, self.improvements)

    def new(self, trace_id: str) -> None:
        """A trace not in the baseline (a note, not a regression)."""
        self._new_count += 1
        if len(self._new) < 5:
            self._new.append(trace_id)

    def finish(
        self, before: Mapping[str, Any] | None = None, after: Mapping[str, Any] | None = None
    ) -> Comparison:
        """The comparison; with both aggregates (:func:`aggregate`'s form), the mean score
        and, when the same traces were evaluated, the required calls over all traces too."""
        if self._new_count:
            n = self._new_count
            shown = ", ".join(self._new) + (f" and {n - 5} more" if n > 5 else "")
            self.notes.append(f"{n} trace(s) not in the baseline: {shown}")
        if before is not None and after is not None:
            _score(
                None, before["mean_score"], after["mean_score"], self.tolerance,
                self.regressions, [],
            )  # fmt: skip
            old_req, new_req = before["required"], after["required"]
            if not self._gone_count and not self._new_count:
                _required(
                    None, (old_req[0], old_req[1]), (new_req[0], new_req[1]), self.regressions
                )
        return Comparison(
            list(self.regressions),
            list(self.improvements),
            self.notes,
            self.tolerance,
            self.regressions.total,
            self.improvements.total,
        )


def compare(
    baseline: Baseline | Mapping[str, TraceSummary],
    current: Mapping[str, TraceSummary],
    tolerance: float = 0.0,
) -> Comparison:
    """Compare a run (``trace_id -> summary``) with a baseline; see the module docstring.

    Traces are matched by id; when both sides hold exactly one trace they are compared
    whatever their ids (a single trace evaluated from another path). With more than one
    trace the aggregate is compared too (mean score, required calls, findings by key).
    :class:`Comparer` does the same one trace at a time.

    Args:
        baseline: the loaded baseline, or its ``trace_id -> summary`` mapping.
        current: this run's summaries.
        tolerance: how far (absolute score, 0-1) a score may drop before it is a regression.

    Raises:
        ValueError: ``tolerance`` is negative or not finite.
    """
    old_traces = baseline.traces if isinstance(baseline, Baseline) else dict(baseline)
    comparer = Comparer(tolerance)
    if len(old_traces) == 1 and len(current) == 1:
        ((old_id, before),) = old_traces.items()
        ((new_id, after),) = current.items()
        if old_id != new_id:
            comparer.notes.append(f"compared {new_id} with baseline trace {old_id}")
        comparer.trace(new_id, before, after)
        return comparer.finish()
    for trace_id in sorted(tid for tid in old_traces if tid not in current):
        comparer.gone(trace_id)
    for trace_id, summary in sorted(current.items()):
        if trace_id in old_traces:
            comparer.trace(trace_id, old_traces[trace_id], summary)
        else:
            comparer.new(trace_id)
    if len(old_traces) > 1 or len(current) > 1:
        return comparer.finish(aggregate(old_traces), aggregate(current))
    return comparer.finish()


def summaries_of(results: Iterable[tuple[str, Any]]) -> dict[str, TraceSummary]:
    """``trace_id -> summary`` for ``(trace_id, result)`` pairs (a helper for datasets)."""
    return {trace_id: summarize(result) for trace_id, result in results}
