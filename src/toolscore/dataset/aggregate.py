"""The dataset aggregate: a small, mergeable state built from per-trace records.

Everything here merges exactly and in any order: the score sum is exact
(:class:`~toolscore._exact.ExactAdder`), counts are integers, examples and worst traces the k
smallest by a total order (the trace's place in the dataset), so one process, a pool or a
Dask cluster give the same bits. Two things grow with the number of traces and so live on
disk, not in the state:

* the scores, for the exact median and p10 (:class:`ScoreSpill`: 8 bytes a trace, read back
  in two bounded passes: a histogram finds the bin of the wanted rank, then only that bin's
  distinct values are counted);
* each trace's (task, passed), for pass@k and pass^k (:class:`TaskSpill`: lines partitioned
  by a hash of the task, each partition counted alone at the end).

pass@k and pass^k use the unbiased estimators over a task's n trials with c passes:
``pass@k = 1 - C(n-c, k) / C(n, k)`` and ``pass^k = C(c, k) / C(n, k)``; a dataset's value is
the mean over its tasks with at least k trials.
"""

from __future__ import annotations

import array
import functools
import heapq
import math
import os
import shutil
import zlib
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import compress, repeat
from typing import IO, Any

import orjson

from .._exact import ExactAdder
from .groups import Groups
from .records import TraceRecord

__all__ = [
    "Aggregate",
    "ScoreSpill",
    "TaskOutcome",
    "TaskSpill",
    "pass_at_k",
    "pass_hat_k",
    "pour",
]

HIST_BINS = 20
"""Score histogram bins over [0, 1] (scores outside go to the first or last bin)."""
EXAMPLES = 3
"""Example trace ids kept per finding kind."""
WORST = 10
"""Worst traces kept: the lowest-scored failing ones."""
MAX_TOOLS = 10_000
"""Tools tracked by name; past that, further tools are counted under :data:`OTHER_TOOLS`."""
OTHER_TOOLS = "(other tools)"


def pour(path: str, *targets: IO[bytes]) -> None:
    """Append the file at ``path`` to each of ``targets``, then remove it (a spill absorbed
    into another)."""
    with open(path, "rb") as f:
        for target in targets:
            f.seek(0)
            shutil.copyfileobj(f, target)
    os.unlink(path)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k over ``n`` trials with ``c`` passes: ``1 - C(n-c,k)/C(n,k)``."""
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 < k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    total = math.comb(n, k)
    # an int divided by an int is the exact quotient correctly rounded: float(Fraction(...))
    return (total - math.comb(n - c, k)) / total


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k (all k trials pass) over ``n`` trials, ``c`` passes: ``C(c,k)/C(n,k)``."""
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"pass^k needs 0 < k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    return math.comb(c, k) / math.comb(n, k)


@dataclass
class Aggregate:
    """What a dataset run adds up, as a mergeable state (``add`` a record, ``merge`` another)."""

    traces: int = 0
    """Records of traces read (every status but ``no_trace``)."""
    statuses: Counter[str] = field(default_factory=Counter)
    scored: int = 0
    score_sum: ExactAdder = field(default_factory=ExactAdder)
    score_min: float = math.inf
    score_max: float = -math.inf
    histogram: list[int] = field(default_factory=lambda: [0] * HIST_BINS)
    grades: Counter[str] = field(default_factory=Counter)
    passed: int = 0
    judged: int = 0
    calls: int = 0
    failed_calls: int = 0
    retries: int = 0
    violations: int = 0
    traces_with_violations: int = 0
    tools: dict[str, list[int]] = field(default_factory=dict)
    """Per tool: ``[calls, failed, retries]``."""
    findings: Counter[str] = field(default_factory=Counter)
    finding_traces: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[tuple[tuple[int, int], str]]] = field(default_factory=dict)
    worst: list[tuple[float, tuple[int, int], str]] = field(default_factory=list)
    """The lowest-scored failing traces as ``(score, order, trace_id)``, kept sorted
    ascending (a trace that passed is never among them, whatever its score)."""
    groups: Groups | None = None
    """The breakdowns asked for (``--group-by``), counted beside the totals."""

    def add(self, record: TraceRecord) -> tuple[str, ...]:
        """Count one trace; returns its value in each breakdown's dimension."""
        if record.status != "no_trace":
            self.traces += 1
        self.statuses[record.status] += 1
        score = record.score
        if score is not None:
            self.scored += 1
            self.score_sum.add(score)
            self.score_min = min(self.score_min, score)
            self.score_max = max(self.score_max, score)
            self.histogram[_bin(score)] += 1
            if record.grade is not None:
                self.grades[record.grade] += 1
            if record.passed is False:
                item = (score, record.order, record.trace_id)
                worst = self.worst  # sorted ascending: most traces cannot get in
                if len(worst) < WORST or item < worst[-1]:
                    self._worst([item])
        if record.passed is not None:
            self.judged += 1
            self.passed += int(record.passed)
        self.calls += record.calls
        self.failed_calls += record.failed_calls
        self.retries += record.retries
        self.violations += record.violations
        self.traces_with_violations += int(record.violations > 0)
        tools = self.tools
        for tool, counts in record.tools.items():
            mine = tools.get(tool)
            if mine is not None and len(counts) >= 3:
                mine[0] += counts[0]
                mine[1] += counts[1]
                mine[2] += counts[2]
            else:
                self._tool(tool, counts)
        if record.findings:
            example = (record.order, record.trace_id)
            for kind, count in record.findings.items():
                self.findings[kind] += count
                self.finding_traces[kind] += 1
                kept = self.examples.get(kind)
                # kept sorted ascending: a later trace rarely gets in
                if kept is None or len(kept) < EXAMPLES or example < kept[-1]:
                    self._examples(kind, [example])
        return () if self.groups is None else self.groups.add(record)

    def merge(self, other: Aggregate) -> None:
        """Add ``other`` in (exact; the order of merges does not matter)."""
        self.traces += other.traces
        self.statuses.update(other.statuses)
        self.scored += other.scored
        self.score_sum.merge(other.score_sum)
        self.score_min = min(self.score_min, other.score_min)
        self.score_max = max(self.score_max, other.score_max)
        self.histogram = [a + b for a, b in zip(self.histogram, other.histogram, strict=True)]
        self.grades.update(other.grades)
        self.passed += other.passed
        self.judged += other.judged
        self.calls += other.calls
        self.failed_calls += other.failed_calls
        self.retries += other.retries
        self.violations += other.violations
        self.traces_with_violations += other.traces_with_violations
        for tool, counts in other.tools.items():
            self._tool(tool, counts)
        self.findings.update(other.findings)
        self.finding_traces.update(other.finding_traces)
        for kind, items in other.examples.items():
            self._examples(kind, items)
        self._worst(other.worst)
        if self.groups is not None and other.groups is not None:
            self.groups.merge(other.groups)

    def _tool(self, tool: str, counts: list[int]) -> None:
        mine = self.tools.get(tool)
        if mine is None:
            if len(self.tools) >= MAX_TOOLS:
                tool = OTHER_TOOLS
                mine = self.tools.get(tool)
            if mine is None:
                mine = self.tools[tool] = [0, 0, 0]
        for i, n in enumerate(counts[:3]):
            mine[i] += n

    def _examples(self, kind: str, items: list[tuple[tuple[int, int], str]]) -> None:
        kept = self.examples.get(kind, [])
        self.examples[kind] = heapq.nsmallest(EXAMPLES, set(kept) | set(items))

    def _worst(self, items: list[tuple[float, tuple[int, int], str]]) -> None:
        self.worst = heapq.nsmallest(WORST, [*self.worst, *items])

    @property
    def capped(self) -> bool:
        """Whether tools past :data:`MAX_TOOLS` were counted together (a merge then counts
        under ``(other tools)`` what adding the records one by one may count by name); the
        same of the breakdowns' groups past theirs."""
        return OTHER_TOOLS in self.tools or (self.groups is not None and self.groups.capped)

    # -- derived values ---------------------------------------------------------------------

    @property
    def mean(self) -> float | None:
        return self.score_sum.total().value() / self.scored if self.scored else None

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.judged if self.judged else None

    def tool_rates(self) -> list[tuple[str, int, int, int, float, float]]:
        """``(tool, calls, failed, retries, failure rate, retry rate)``, the most failed calls
        first (a count, not a rate: a tool of 5 calls that all failed does not hide one with
        400 failures), then by failure rate and name."""
        rows = [
            (tool, c, f, r, f / c if c else 0.0, r / c if c else 0.0)
            for tool, (c, f, r) in self.tools.items()
        ]
        rows.sort(key=lambda row: (-row[2], -row[4], row[0]))
        return rows


def _bin(score: float) -> int:
    if not score >= 0.0:
        return 0
    return min(int(score * HIST_BINS), HIST_BINS - 1)


class ScoreSpill:
    """Every score, 8 bytes each on disk, for exact quantiles in bounded memory."""

    BUFFER = 65_536
    """Scores held before they are appended to the file."""
    BINS = 4096

    def __init__(self, path: str) -> None:
        self.path = path
        self._buffer = array.array("d")
        self.count = 0
        self._file = open(path, "wb")

    def add(self, score: float) -> None:
        self._buffer.append(score)
        self.count += 1
        if len(self._buffer) >= self.BUFFER:
            self._flush()

    def _flush(self) -> None:
        self._buffer.tofile(self._file)
        self._buffer = array.array("d")

    def close(self) -> None:
        if not self._file.closed:
            self._flush()
            self._file.close()

    def absorb(self, later: ScoreSpill) -> None:
        """Append ``later``'s scores (it is closed and its file removed)."""
        later.close()
        self._flush()
        pour(later.path, self._file)
        self.count += later.count

    def _chunks(self) -> Iterator[array.array[float]]:
        with open(self.path, "rb") as f:
            while True:
                chunk = array.array("d")
                try:
                    chunk.fromfile(f, self.BUFFER)
                except EOFError:
                    if chunk:
                        yield chunk
                    return
                yield chunk

    def kth(self, k: int, lo: float, hi: float) -> float:
        """The k-th smallest score (0-based), exactly: two passes over the file, the first
        counting the scores in each of :attr:`BINS` bins over ``[lo, hi]``, the second taking
        the distinct scores of the bin that holds the k-th (each score's bin found by C's
        bisection, the same in both passes)."""
        self.close()
        width = (hi - lo) / self.BINS or 1.0
        edges = [lo + width * i for i in range(1, self.BINS)]
        counts: Counter[int] = Counter()
        for chunk in self._chunks():
            counts.update(map(bisect_right, repeat(edges), chunk))
        seen = 0
        target = 0
        for target in range(self.BINS):
            n = counts.get(target, 0)
            if seen + n > k:
                break
            seen += n
        values: Counter[float] = Counter()
        for chunk in self._chunks():
            values.update(
                compress(chunk, map(target.__eq__, map(bisect_right, repeat(edges), chunk)))
            )
        for value in sorted(values):
            seen += values[value]
            if seen > k:
                return value
        raise ValueError(f"rank {k} is past the {self.count} scores")  # pragma: no cover

    def quantile(self, q: float, lo: float, hi: float) -> float | None:
        """The q-quantile with linear interpolation between order statistics (numpy's default)."""
        n = self.count
        if not n:
            return None
        pos = (n - 1) * q
        below = math.floor(pos)
        a = self.kth(below, lo, hi)
        if pos == below:
            return a
        b = self.kth(below + 1, lo, hi)
        return a + (b - a) * (pos - below)


@dataclass(frozen=True)
class TaskOutcome:
    """One task's trials: ``n`` judged, ``c`` passed, pass@k and pass^k for k = 1..n."""

    task: str
    n: int
    c: int
    pass_at: tuple[float, ...]
    pass_hat: tuple[float, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "trials": self.n,
            "passed": self.c,
            "pass_at_k": {str(k + 1): v for k, v in enumerate(self.pass_at)},
            "pass_hat_k": {str(k + 1): v for k, v in enumerate(self.pass_hat)},
        }


def outcome(task: str, n: int, c: int) -> TaskOutcome:
    return TaskOutcome(task, n, c, *_estimates(n, c))


@functools.lru_cache(maxsize=1024)
def _estimates(n: int, c: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """pass@k and pass^k for k = 1..n (most tasks of a run share their trials and passes)."""
    return (
        tuple(pass_at_k(n, c, k) for k in range(1, n + 1)),
        tuple(pass_hat_k(n, c, k) for k in range(1, n + 1)),
    )


class TaskSpill:
    """Each judged trace's (task, passed), partitioned on disk by a hash of the task, with
    its groups (``--group-by``) when there are breakdowns."""

    PARTS = 16

    def __init__(self, directory: str, name: str = "", dims: int = 0) -> None:
        self.directory = directory
        self.paths = [os.path.join(directory, f"tasks{name}-{i}.jsonl") for i in range(self.PARTS)]
        """The partitions' files (``name`` tells two spills in one directory apart)."""
        self._files = [open(path, "wb") for path in self.paths]
        self.by_counts: Counter[tuple[int, int]] | None = None
        self.by_group: list[dict[str, Counter[tuple[int, int]]]] = [{} for _ in range(dims)]
        """Per breakdown dimension and group: its tasks by (n, c), counting a task's trials
        in that group only (filled by :meth:`outcomes`)."""

    def add(self, task: str, passed: bool, groups: tuple[str, ...] = ()) -> None:
        part = zlib.crc32(task.encode("utf-8", "surrogatepass")) % self.PARTS
        item: list[Any] = [task, passed, groups] if groups else [task, passed]
        self._files[part].write(orjson.dumps(item) + b"\n")

    def close(self) -> None:
        for f in self._files:
            f.close()

    def absorb(self, later: TaskSpill) -> None:
        """Append ``later``'s lines, partition by partition (it is closed and its files
        removed)."""
        later.close()
        for mine, path in zip(self._files, later.paths, strict=True):
            pour(path, mine)

    def outcomes(self) -> Iterator[TaskOutcome]:
        """Every task's outcome, sorted by task within each partition; also fills
        :attr:`by_counts` (tasks by (n, c)) for the dataset's pass@k."""
        self.close()
        counts: Counter[tuple[int, int]] = Counter()
        by_group = self.by_group
        for i in range(self.PARTS):
            tasks: dict[str, list[int]] = {}
            grouped: dict[tuple[int, str, str], list[int]] = {}
            with open(self.paths[i], "rb") as f:
                for line in f:
                    task, passed, *groups = orjson.loads(line)
                    nc = tasks.get(task)
                    if nc is None:
                        nc = tasks[task] = [0, 0]
                    nc[0] += 1
                    nc[1] += int(passed)
                    for dim, value in enumerate(groups[0] if groups else ()):
                        nc = grouped.get((dim, value, task))
                        if nc is None:
                            nc = grouped[(dim, value, task)] = [0, 0]
                        nc[0] += 1
                        nc[1] += int(passed)
            for (dim, value, _), (n, c) in grouped.items():
                by_group[dim].setdefault(value, Counter())[(n, c)] += 1
            for task in sorted(tasks):
                n, c = tasks[task]
                counts[(n, c)] += 1
                yield outcome(task, n, c)
        self.by_counts = counts


def overall_pass(
    by_counts: Mapping[tuple[int, int], int], ks: Sequence[int] | None = None
) -> list[tuple[int, int, float | None, float | None]]:
    """``(k, tasks with >= k trials, pass@k, pass^k)``: means over the tasks with at least k
    trials, for each k of ``ks`` (``None``: k = 1..max trials); for a k no task reaches,
    ``(k, 0, None, None)``."""
    if not by_counts:
        return [(k, 0, None, None) for k in ks or ()]
    top = max(n for n, _ in by_counts)
    rows: list[tuple[int, int, float | None, float | None]] = []
    for k in ks if ks is not None else range(1, top + 1):
        if k > top:
            rows.append((k, 0, None, None))
            continue
        tasks = 0
        at = Fraction(0)
        hat = Fraction(0)
        for (n, c), count in by_counts.items():
            if n < k:
                continue
            tasks += count
            denominator = math.comb(n, k)
            at += count * (1 - Fraction(math.comb(n - c, k), denominator))
            hat += count * Fraction(math.comb(c, k), denominator)
        rows.append((k, tasks, float(at / tasks), float(hat / tasks)))
    return rows


def pass_k_json(rows: Sequence[tuple[int, int, float | None, float | None]]) -> dict[str, Any]:
    """:func:`overall_pass`'s rows as the JSON report has them (the run's and each group's)."""
    return {
        "pass_at_k": {str(k): at for k, _, at, _ in rows},
        "pass_hat_k": {str(k): hat for k, _, _, hat in rows},
        "tasks_with_k_trials": {str(k): n for k, n, _, _ in rows},
    }
