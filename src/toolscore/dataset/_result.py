"""A dataset run's result: the aggregate with its quantiles and pass@k, the per-trace
records and each task's outcome read back from the run's files, and its JSON summary."""

from __future__ import annotations

import shutil
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from .aggregate import Aggregate, TaskOutcome, pass_k_json
from .groups import GroupRow
from .records import PassCriterion, TraceRecord


@dataclass
class DatasetResult:
    """A dataset run: iterate it for the per-trace records; ``aggregate`` holds the totals."""

    aggregate: Aggregate
    criterion: PassCriterion
    median: float | None
    p10: float | None
    pass_k: list[tuple[int, int, float | None, float | None]]
    """``(k, tasks with >= k trials, pass@k, pass^k)`` for each k asked for (``--k``; by
    default 1..max trials)."""
    tasks_count: int
    errors: list[TraceRecord]
    missing_gold: list[str]
    missing_trace: list[str]
    problems: list[str]
    """Run-level problems: lost parts, retried workers, unusable gold lines."""
    elapsed: float
    bytes_read: int
    engine: str
    workers: int
    _spool: str
    _tasks: str
    _workdir: str | None = field(default=None, repr=False)
    gold_problems: int = 0
    """Lines of a keyed gold file that could not be used (bad lines, lines without an id or
    expected calls, duplicate ids): an input error, as a broken trace is; the first 100 are
    described in :attr:`problems`."""
    checks_only: bool = False
    """No gold was given: every trace was checked, none scored."""
    groups: dict[str, list[GroupRow]] = field(default_factory=dict)
    """Per breakdown dimension (``group_by``), its groups, failing ones first."""
    ks: tuple[int, ...] | None = None
    """The k of the pass@k / pass^k columns (``None``: 1..max trials)."""
    interrupted: bool = False
    """A signal (Ctrl-C, SIGTERM) stopped the run: the result holds the traces read before
    it (:attr:`problems` says so); gold without a trace is then not listed."""

    def __post_init__(self) -> None:
        # the temporary files go with the result (or with close())
        self._finalizer = weakref.finalize(
            self, shutil.rmtree, self._workdir or "", ignore_errors=True
        )

    def __iter__(self) -> Iterator[TraceRecord]:
        """Every record (traces in reading order, then gold without a trace)."""
        decoder = msgspec.json.Decoder(TraceRecord)
        with open(self._spool, "rb") as f:
            for line in f:
                yield decoder.decode(line)

    @property
    def tasks(self) -> Iterator[TaskOutcome]:
        """Each task's trials with pass@k and pass^k (sorted by task within hash partitions)."""
        decoder = msgspec.json.Decoder(TaskOutcome)
        with open(self._tasks, "rb") as f:
            for line in f:
                yield decoder.decode(line)

    @property
    def traces(self) -> int:
        return self.aggregate.traces

    @property
    def mean(self) -> float | None:
        return self.aggregate.mean

    @property
    def pass_rate(self) -> float | None:
        return self.aggregate.pass_rate

    @property
    def input_errors(self) -> int:
        """Error records (broken traces, unreadable lines, lost parts)."""
        return self.aggregate.statuses.get("error", 0)

    def close(self) -> None:
        """Remove the temporary files (also done when the result is collected)."""
        self._finalizer()

    def summary(self) -> dict[str, Any]:
        """The aggregate as JSON data."""
        agg = self.aggregate
        return {
            "traces": agg.traces,
            "statuses": dict(agg.statuses),
            "scored": agg.scored,
            "mean_score": agg.mean,
            "median_score": self.median,
            "p10_score": self.p10,
            "min_score": agg.score_min if agg.scored else None,
            "max_score": agg.score_max if agg.scored else None,
            "grades": {g: agg.grades.get(g, 0) for g in ("A", "B", "C", "D", "F")},
            "score_histogram": agg.histogram,
            "pass_criterion": self.criterion.to_json(),
            "passed": agg.passed,
            "judged": agg.judged,
            "pass_rate": agg.pass_rate,
            "tasks": self.tasks_count,
            **pass_k_json(self.pass_k),
            "groups": {dim: [row.to_json() for row in rows] for dim, rows in self.groups.items()},
            "calls": agg.calls,
            "failed_calls": agg.failed_calls,
            "retries": agg.retries,
            "violations": agg.violations,
            "traces_with_violations": agg.traces_with_violations,
            "tools": [
                {
                    "tool": tool,
                    "calls": c,
                    "failed": f,
                    "retries": r,
                    "failure_rate": fr,
                    "retry_rate": rr,
                }
                for tool, c, f, r, fr, rr in agg.tool_rates()
            ],
            "findings": [
                {
                    "kind": kind,
                    "count": count,
                    "traces": agg.finding_traces[kind],
                    "examples": [trace_id for _, trace_id in agg.examples.get(kind, [])],
                }
                for kind, count in sorted(agg.findings.items(), key=lambda kv: (-kv[1], kv[0]))
            ],
            "worst": [{"trace_id": t, "score": s} for s, _, t in agg.worst],
            "missing_gold": agg.statuses.get("no_gold", 0),
            "missing_trace": agg.statuses.get("no_trace", 0),
            "input_errors": self.input_errors,
            "gold_problems": self.gold_problems,
            "interrupted": self.interrupted,
            "elapsed_s": self.elapsed,
            "traces_per_s": agg.traces / self.elapsed if self.elapsed > 0 else None,
            "bytes": self.bytes_read,
            "engine": self.engine,
            "workers": self.workers,
        }


def _dump_task(outcome: TaskOutcome) -> bytes:
    return msgspec.json.encode(outcome) + b"\n"
