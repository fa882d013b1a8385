"""A dataset's CI outputs: ``--junit``, ``--sarif``, ``--baseline`` and ``--save-baseline``.

The single-trace writers do the writing (:class:`toolscore.reports.junit.JunitWriter`,
:class:`toolscore.reports.sarif.SarifWriter`, :mod:`toolscore.baseline`); this module feeds
them one trace at a time, as the dataset's records arrive in reading order:

* a worker evaluating with ``details=True`` puts a :class:`TraceView` on each record
  (``record.ci``): what those writers read of a result (score, findings with their lines,
  the input error, the baseline summary), small and picklable, its lines counted from the
  part's start until the driver shifts them (:meth:`TraceView.shifted`);
* :class:`DatasetCi` takes each record (``on_record``): a JUnit test case and the SARIF
  results are appended to their spools at once (nothing kept), the baseline summary goes to
  an SQLite file on disk; at the end the gates are added, the files closed, and the
  baseline compared and written in trace-id order from SQLite. Memory does not grow with the
  number of traces: the first regressions listed (:data:`toolscore.baseline.MAX_LISTED`)
  and the findings' keys of the aggregates.

A trace's JUnit test case fails when it did not pass (the pass criterion, see
:class:`~.records.PassCriterion`, with the reasons in its message), errors when it could not
be read whole, and is skipped when it has no score (a trace without gold, gold without a
trace), unless it has an error-severity finding, which fails it.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from ..calls import Finding, FindingValues, Location
from ..errors import UsageError
from ..sanitize import shown
from ._sqlite import scratch

if TYPE_CHECKING:
    from ..baseline import Comparison, TraceSummary
    from ..cli._options import CiOptions
    from ..reports.junit import Gate
    from .records import PassCriterion, TraceRecord

__all__ = ["DatasetCi", "TraceView", "finish_ci", "trace_view"]


class TraceView(msgspec.Struct, kw_only=True):
    """What the CI writers need of one trace's evaluation (built in the worker)."""

    findings: list[FindingValues] = msgspec.field(default_factory=list)
    """Each finding kept, as :meth:`toolscore.calls.Finding.values` (lines in the file)."""
    input_error: str | None = None
    """What stopped reading the trace early (redacted, with file and line)."""
    input_error_line: int | None = None
    input_problems: int = 0
    notes: list[str] = msgspec.field(default_factory=list)
    summary: dict[str, Any] | None = None
    """The baseline summary (:meth:`toolscore.baseline.TraceSummary.to_json`)."""

    def shifted(self, lines: int) -> TraceView:
        """The same view ``lines`` lines further on (a byte-range part's place in its file)."""
        if not lines:
            return self
        return TraceView(
            findings=[Finding.from_values(v).moved(0, lines).values() for v in self.findings],
            input_error=self.input_error,
            input_error_line=None
            if self.input_error_line is None
            else self.input_error_line + lines,
            input_problems=self.input_problems,
            notes=self.notes,
            summary=self.summary,
        )


def _file_line(rel: int | None, linenos: list[int] | None) -> int | None:
    if rel is None or linenos is None:
        return rel
    return linenos[rel - 1] if 0 < rel <= len(linenos) else None


def trace_view(
    result: Any,
    source: str,
    linenos: list[int] | None,
    error: str | None,
    scored: bool = True,
) -> TraceView:
    """The view of one evaluation ``result`` of a trace read from ``source``.

    Args:
        result: the trace's ``EvaluationResult``.
        source: the file (or URL) the trace was read from.
        linenos: the file line of each of the trace's lines, when the trace is some lines of
            a multi-trace file (its findings' lines are the trace's own); ``None``: the
            findings' lines are the file's already.
        error: the record's error text (file and line already), when reading stopped early.
        scored: False for a trace checked without gold (its summary has no score).
    """
    # CI outputs load only when asked for: start-up of a dataset run
    from ..baseline import summarize

    findings = []
    for finding in result.findings:
        loc = finding.location
        if loc is not None and (linenos is not None or loc.source != source):
            line = _file_line(loc.line, linenos)
            moved = Finding(
                finding.check, finding.kind, finding.severity, None, finding.call_index,
                finding.tool, Location(source, line, None if line is not None else loc.offset),
                finding.preview, rule=finding.rule, path=finding.path, detail=finding.detail,
                template=finding.template,
            )  # fmt: skip
            findings.append(moved.values())
        else:
            findings.append(finding.values())
    input_error = result.input_error
    return TraceView(
        findings=findings,
        input_error=None if input_error is None else (error or str(input_error)),
        input_error_line=None if input_error is None else _file_line(input_error.line, linenos),
        input_problems=int(result.input_problems or 0),
        notes=list(result.notes),
        summary=summarize(result, scored).to_json(),
    )


class _InputError:
    """An input error as the writers read it: ``str()`` and ``line``."""

    def __init__(self, message: str, line: int | None) -> None:
        self.message = message
        self.line = line

    def __str__(self) -> str:
        return self.message


class CiResult:
    """One trace as :class:`~toolscore.reports.junit.JunitWriter` and
    :class:`~toolscore.reports.sarif.SarifWriter` read a result (by attributes)."""

    def __init__(self, record: TraceRecord, criterion: PassCriterion) -> None:
        view = record.ci
        self.record = record
        self.score = record.score
        self.grade = record.grade
        self.trace_calls_count = record.calls
        self.required_call_recall = record.required_call_recall
        self.findings: list[Finding] = []
        self.input_findings: list[Finding] = []
        self.input_problems = 0
        self.input_error: _InputError | None = None
        self.notes: list[str] = []
        self.skipped: str | None = None
        self.failure: str | None = None
        if view is not None:
            self.findings = [Finding.from_values(v) for v in view.findings]
            self.input_findings = [f for f in self.findings if f.check == "input"]
            self.input_problems = view.input_problems
            self.notes = list(view.notes)
            if view.input_error is not None:
                self.input_error = _InputError(view.input_error, view.input_error_line)
            elif record.status == "error" and record.error and not view.input_problems:
                self.input_error = _InputError(record.error, record.line)
        elif record.status == "error":
            self.input_error = _InputError(record.error or "not evaluated", record.line)
        if record.status == "no_gold":
            self.skipped = "no gold for this trace: its calls were checked, it has no score"
        elif record.status == "no_trace":
            self.skipped = record.error or "gold without a trace"
        elif record.passed is False:
            self.failure = _why(record, criterion)

    @property
    def failed(self) -> bool:
        """The test case fails: the trace did not pass, or (without a score) it has an
        error-severity finding."""
        if self.record.passed is False:
            return True
        return self.record.passed is None and any(f.severity == "error" for f in self.findings)


def _why(record: TraceRecord, criterion: PassCriterion) -> str:
    """Why ``record`` did not pass, in one line (the criterion's own reasons)."""
    return "did not pass: " + ("; ".join(criterion.reasons(record)) or criterion.describe())


def trace_name(record: TraceRecord) -> str:
    """The test case's name: the trace id, or where an id-less record comes from."""
    if record.trace_id:
        return record.trace_id
    where = record.source or "<dataset>"
    if record.line is not None:
        return f"{where}:{record.line}"
    if record.offset is not None:
        return f"{where}: byte {record.offset}"
    return where


class DatasetCi:
    """The CI outputs of one dataset run (see the module docstring).

    Create it before the run (a baseline that cannot be read is an error before anything is
    evaluated), pass :meth:`add` as ``on_record`` (with ``details=True``), then
    :meth:`finish` with the run's gates; :meth:`close` drops the temporary files.

    Raises:
        UsageError: a bad tolerance.
        InputError: the baseline cannot be read.
    """

    def __init__(
        self, options: CiOptions, criterion: PassCriterion, *, workdir: str | None = None
    ) -> None:
        if not math.isfinite(options.baseline_tolerance) or options.baseline_tolerance < 0:
            raise UsageError(
                f"--baseline-tolerance must be a number >= 0, got {options.baseline_tolerance}"
            )
        # CI outputs load only when asked for: start-up of a dataset run
        from ..baseline import AggregateBuilder

        self.options = options
        self.criterion = criterion
        self._work = tempfile.mkdtemp(prefix="toolscore-ci-", dir=workdir)
        self._db: sqlite3.Connection | None = None
        self._junit: Any = None
        self._sarif: Any = None
        self.current = AggregateBuilder()
        self.before = AggregateBuilder()
        self._base_count = 0
        try:
            if options.baseline or options.save_baseline:
                self._db = scratch(os.path.join(self._work, "baseline.sqlite"))
                self._db.execute("CREATE TABLE cur (id TEXT PRIMARY KEY, s TEXT) WITHOUT ROWID")
                self._db.execute("CREATE TABLE base (id TEXT PRIMARY KEY, s TEXT) WITHOUT ROWID")
            if options.baseline:
                self._load(options.baseline)
            if options.junit:
                # CI outputs load only when asked for: start-up of a dataset run
                from ..reports.junit import JunitWriter

                self._junit = JunitWriter(options.junit, failed=lambda r: r.failed)
            if options.sarif:
                # CI outputs load only when asked for: start-up of a dataset run
                from ..reports.sarif import SarifWriter

                self._sarif = SarifWriter(options.sarif)
        except BaseException:
            self.close()
            raise

    def _load(self, path: str) -> None:
        # CI outputs load only when asked for: start-up of a dataset run
        from ..baseline import iter_baseline

        assert self._db is not None
        batch: list[tuple[str, str]] = []
        for trace_id, summary in iter_baseline(path):
            self.before.add(summary)
            self._base_count += 1
            batch.append((trace_id, json.dumps(summary.to_json(), sort_keys=True)))
            if len(batch) >= 10_000:
                self._db.executemany("INSERT OR REPLACE INTO base VALUES (?, ?)", batch)
                batch = []
        self._db.executemany("INSERT OR REPLACE INTO base VALUES (?, ?)", batch)

    def add(self, record: TraceRecord) -> None:
        """Take one record (in reading order)."""
        result = CiResult(record, self.criterion)
        name = trace_name(record)
        if self._junit is not None:
            self._junit.add_trace(name, record.source, result)
        if self._sarif is not None:
            self._sarif.add_trace(name, record.source, result)
        view = record.ci
        if (
            self._db is not None
            and view is not None
            and view.summary is not None
            and record.trace_id
        ):
            # CI outputs load only when asked for: start-up of a dataset run
            from ..baseline import TraceSummary, baseline_name

            trace_id = baseline_name(record.trace_id)  # as the baseline stores it
            summary = TraceSummary.from_json(view.summary, trace_id)
            cur = self._db.execute(
                "INSERT OR IGNORE INTO cur VALUES (?, ?)",
                (trace_id, json.dumps(view.summary, sort_keys=True)),
            )
            if cur.rowcount:
                self.current.add(summary)

    def _summaries(self, sql: str) -> Iterator[tuple[str, TraceSummary]]:
        # CI outputs load only when asked for: start-up of a dataset run
        from ..baseline import TraceSummary

        assert self._db is not None
        for trace_id, text in self._db.execute(sql):
            yield trace_id, TraceSummary.from_json(json.loads(text), trace_id)

    def compare(self) -> Comparison | None:
        """This run against ``--baseline`` (``None`` without one); see
        :func:`toolscore.baseline.compare`, which this does one trace at a time."""
        if not self.options.baseline or self._db is None:
            return None
        # CI outputs load only when asked for: start-up of a dataset run
        from ..baseline import Comparer, TraceSummary

        db = self._db
        comparer = Comparer(self.options.baseline_tolerance)
        current_count = self.current.traces
        if self._base_count == 1 and current_count == 1:
            ((old_id, before),) = self._summaries("SELECT id, s FROM base")
            ((new_id, after),) = self._summaries("SELECT id, s FROM cur")
            if old_id != new_id:
                comparer.notes.append(f"compared {new_id} with baseline trace {old_id}")
            comparer.trace(new_id, before, after)
            return comparer.finish()
        for (trace_id,) in db.execute(
            "SELECT id FROM base WHERE id NOT IN (SELECT id FROM cur) ORDER BY id"
        ):
            comparer.gone(trace_id)
        rows = db.execute(
            "SELECT cur.id, cur.s, base.s FROM cur LEFT JOIN base ON base.id = cur.id "
            "ORDER BY cur.id"
        )
        for trace_id, now, then in rows:
            if then is None:
                comparer.new(trace_id)
                continue
            comparer.trace(
                trace_id,
                TraceSummary.from_json(json.loads(then), trace_id),
                TraceSummary.from_json(json.loads(now), trace_id),
            )
        if self._base_count > 1 or current_count > 1:
            return comparer.finish(self.before.result(), self.current.result())
        return comparer.finish()

    def save(self) -> None:
        """Write ``--save-baseline``: every scored trace, sorted by id, streamed."""
        if not self.options.save_baseline or self._db is None:
            return
        # CI outputs load only when asked for: start-up of a dataset run
        from ..baseline import write_baseline_entries

        write_baseline_entries(
            self.options.save_baseline,
            self.current.result(),
            self._summaries("SELECT id, s FROM cur ORDER BY id"),
        )

    def finish(self, gates: Sequence[Gate]) -> None:
        """Add the gates and write the JUnit and SARIF files.

        Raises:
            OSError: a file cannot be written.
        """
        junit, self._junit = self._junit, None
        sarif, self._sarif = self._sarif, None
        # CI outputs load only when asked for: start-up of a dataset run
        from ..reports.junit import finish_ci_outputs

        finish_ci_outputs(junit, sarif, gates)

    def close(self) -> None:
        """Drop what is unfinished and the temporary files."""
        for writer in (self._junit, self._sarif):
            if writer is not None:
                writer.abort()
        self._junit = self._sarif = None
        if self._db is not None:
            self._db.close()
            self._db = None
        shutil.rmtree(self._work, ignore_errors=True)


def finish_ci(
    ci: DatasetCi, gates: Sequence[Gate], console: Any, markdown: str | None = None
) -> tuple[Comparison | None, list[Gate]]:
    """Compare with ``--baseline`` (its verdict printed, made a gate, and appended to the
    Markdown report ``markdown``), save
    ``--save-baseline``, write the JUnit (with ``gates``) and SARIF files, and name them.

    Returns:
        The comparison with the baseline (``None`` without one; a regression makes the run
        exit 1) and the gates, the baseline's added.

    Raises:
        OSError: a file cannot be written.
    """
    # start-up of a library dataset run: rich (and typer) load only for the CLI's output
    from rich.text import Text

    from ..cli._ci import baseline_gate, say_verdict

    options = ci.options
    comparison = ci.compare()
    all_gates = list(gates)
    if comparison is not None:
        say_verdict(console, comparison, markdown)
        all_gates.append(baseline_gate(comparison))
    ci.save()
    ci.finish(all_gates)
    for label, path in (
        ("Baseline", options.save_baseline),
        ("JUnit XML", options.junit),
        ("SARIF", options.sarif),
    ):
        if path:
            console.print(Text(f"> {label}: {shown(path)}"))
    console.file.flush()
    return comparison, all_gates
