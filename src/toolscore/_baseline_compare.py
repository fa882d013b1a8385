"""Comparing a run with its baseline: the regressions (a score that dropped, required calls
no longer completed, findings new or more frequent, traces missing or unreadable) and the
improvements, trace by trace in id order (:class:`Comparer`) or all at once (:func:`compare`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._baseline_file import Baseline
from ._baseline_summary import TraceSummary, aggregate, baseline_name

MAX_LISTED = 1000
"""Regressions and improvements a :class:`Comparison` lists (all are counted)."""
_EPSILON = 1e-9  # a score equal to the baseline's within float noise is not a drop


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

    Traces are matched by id (by :func:`~toolscore.baseline.baseline_name`: an id holding
    a credential is shown redacted and matched by its hash); when both sides hold exactly
    one trace they are compared whatever their ids (a single trace evaluated from another
    path). With more than one trace the aggregate is compared too (mean score, required
    calls, findings by key).
    :class:`Comparer` does the same one trace at a time.

    Args:
        baseline: the loaded baseline, or its ``trace_id -> summary`` mapping.
        current: this run's summaries.
        tolerance: how far (absolute score, 0-1) a score may drop before it is a regression.

    Raises:
        ValueError: ``tolerance`` is negative or not finite.
    """
    old = baseline.traces if isinstance(baseline, Baseline) else baseline
    # ids as the baseline stores them: a credential-shaped id redacted, matched by its hash
    old_traces = {baseline_name(trace_id): summary for trace_id, summary in old.items()}
    current = {baseline_name(trace_id): summary for trace_id, summary in current.items()}
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
