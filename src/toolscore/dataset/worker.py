"""A part of a dataset evaluated in one worker (a pool process, a Dask worker, or inline).

Each trace is evaluated whole by :func:`toolscore.api.evaluate_trace`, so its score is the one
``toolscore eval`` gives that trace alone; :func:`run_part` returns the part's records in
reading order, with line numbers counted from the part's start (the driver shifts them).
"""

from __future__ import annotations

import gc
import io
import os
import re
import tempfile
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from typing import IO, Any

from ..calls import Batch, ToolCall
from ..columns import Columns
from ..errors import InputError, ToolscoreError
from ..hardrules.spec import RuleSet
from ..redact import redact_secrets
from ..sources._drive import decompressing, is_compressed
from ..verdict import PassCriterion, judge
from .gold import GoldSpec, gold_lookup
from .groups import GroupBy
from .inputs import (
    BLANK,
    SNIFF_BYTES,
    Decompressed,
    Grouper,
    IdReader,
    Input,
    Part,
    Trace,
    add_frames,
    contiguous_traces,
    count_line_starts,
    detect_key,
    id_before,
    id_chunks,
    in_location,
    interleaved,
    is_otlp,
    line_ids,
    next_line,
    open_input,
    open_lines,
    open_output,
    otlp_items,
    otlp_traces,
    partition,
    write_frame,
)
from .records import (
    TraceRecord,
    pack_records,
    read_records,
    unpack_records,
    write_records,
)

__all__ = [
    "DEFAULT_TASK_REGEX",
    "MISSING_TRACE",
    "Config",
    "PartResult",
    "range_lines",
    "run_part",
]

MISSING_TRACE = ("empty", "skip")
"""What ``--missing-trace`` may say of gold without a trace (see :attr:`Config.missing_trace`)."""

DEFAULT_TASK_REGEX = r"^(?P<task>.+?)[/:_.-]+(?:trial|try|run|sample|attempt|seed)[-_]?\d+$"
"""Without ``--task-key`` or ``--task-regex``, a trace id ending in ``/trial2`` (``_try3``,
``-run1``, ``.sample0``...) belongs to the task before it; any other id is its own task."""


@dataclass(frozen=True)
class Config:
    """Everything a worker needs besides its part (picklable)."""

    gold: GoldSpec
    format: str = "auto"
    weights: dict[str, float] | None = None
    forbidden: RuleSet | None = None
    """The run's rules, read once by :func:`toolscore.api.read_rules` (they pickle as their
    source: a worker anywhere builds the same)."""
    strict: bool = False
    trace_key: str | None = None
    """``None`` or ``auto``: detected per file from :data:`~.inputs.ID_KEYS`."""
    task_key: str | None = None
    task_regex: str | None = None
    criterion: PassCriterion = field(default_factory=PassCriterion)
    interleaved: bool = False
    storage_options: dict[str, Any] = field(default_factory=dict)
    spill_dir: str | None = None
    records_dir: str | None = None
    """Where a part's records may be spooled for the driver (:class:`Records`): the run's
    work directory, when every worker sees it (the pool; a Dask cluster that shares this
    machine's disk), else None."""
    scatter_dir: str | None = None
    """Where a file's lines are scattered (:attr:`~.inputs.Part.scatter`): the run's work
    directory as above, else a directory (a path or a URL) of ``shared_dir``, else None."""
    pii: frozenset[str] = frozenset()
    """The opt-in personal-data kinds looked for and redacted (``--pii``)."""
    max_value_bytes: int | None = None
    """The largest value read whole (``--max-value-bytes``); ``None``: the default."""
    details: bool = False
    """Records carry a :class:`~.ci.TraceView` (for JUnit, SARIF, baselines)."""
    missing_trace: str = "empty"
    """Gold without a trace: ``empty`` scores it as a trial of zero calls (a task whose right
    answer is "make no call" can pass); ``skip`` gives it the status ``no_trace``."""
    group_by: GroupBy | None = None
    """The breakdowns (``--group-by``): the fields they name are read from each trace's
    first line into its record (:attr:`~.records.TraceRecord.fields`)."""


@dataclass
class PartResult:
    """What a part gives back."""

    index: int
    records: list[TraceRecord]
    lines: list[int]
    """Lines read in each of the part's files (for the line numbers of the next part)."""
    bytes_read: int = 0
    spool: str | None = None
    """A file of the part's first records (:class:`Records`), before :attr:`records`."""
    scattered: tuple[str, list[int]] | None = None
    """A scatter range's file of framed lines, and where each partition's starts (and the
    last ends) in it (:attr:`~.inputs.Part.scatter`)."""

    def batches(self) -> Iterator[list[TraceRecord]]:
        """The part's records in order, a batch at a time: the spool's (the file is then
        removed), then :attr:`records`."""
        if self.spool is not None:
            try:
                with open(self.spool, "rb") as f:
                    yield from read_records(f)
            finally:
                os.unlink(self.spool)
            self.spool = None
        if self.records:
            yield self.records

    def __getstate__(self) -> dict[str, Any]:
        # to the driver (a pool's pipe, a Dask cluster) the records go as one MessagePack
        # buffer, encoded and decoded in C: a quarter of pickling them one object at a time
        state = dict(self.__dict__)
        state["records"] = pack_records(self.records)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        # decoding makes thousands of containers at once, none in a cycle: the collector's
        # passes over the driver's heap meanwhile would cost more than the decoding
        enabled = gc.isenabled()
        gc.disable()
        try:
            state["records"] = unpack_records(state["records"])
        finally:
            if enabled:
                gc.enable()
        self.__dict__.update(state)


SPOOL_RECORDS = 2_000
"""Records a part holds in memory before :class:`Records` writes them to its spool."""


class Records:
    """A part's records as they are made (``append``; ``len`` counts them all). With
    ``directory`` (a local engine's work directory, which the driver reads too) and
    :meth:`spill` on, every :data:`SPOOL_RECORDS` records are written to a spool file there:
    a part of many traces (a file whose lines interleave) then holds a bounded number, and
    the driver takes them in a batch at a time (:meth:`PartResult.batches`)."""

    def __init__(self, directory: str | None = None) -> None:
        self.held: list[TraceRecord] = []
        self.count = 0
        self.last_id: str | None = None
        """The id of the last record that has one."""
        self.path: str | None = None
        self._directory = directory
        self._spill = False
        self._file: IO[bytes] | None = None

    def __len__(self) -> int:
        return self.count

    def append(self, record: TraceRecord) -> None:
        self.held.append(record)
        self.count += 1
        if record.trace_id:
            self.last_id = record.trace_id
        if self._spill and len(self.held) >= SPOOL_RECORDS:
            self._write()

    def spill(self) -> None:
        """Write to the spool from now on (when there is a directory)."""
        self._spill = self._directory is not None

    def _write(self) -> None:
        if self._file is None:
            fd, self.path = tempfile.mkstemp(prefix="records-", dir=self._directory)
            self._file = os.fdopen(fd, "wb")
        write_records(self._file, self.held)
        self.held = []

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


class _ToolCounter:
    """A call sink counting calls per tool (columns: no ``ToolCall`` is built for it)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def __call__(self, calls: list[ToolCall]) -> None:
        self.counts.update(call.tool for call in calls)

    def take_columns(self, columns: Columns) -> None:
        self.counts.update(columns.tools)


class _Tasks:
    def __init__(self, cfg: Config) -> None:
        pattern = cfg.task_regex or DEFAULT_TASK_REGEX
        self.regex = re.compile(pattern)
        self.explicit = cfg.task_regex is not None

    def task(self, trace_id: str, field_value: str | None) -> str:
        if field_value is not None:
            return field_value
        match = self.regex.search(trace_id)
        if match is None:
            return trace_id
        if "task" in self.regex.groupindex:
            return match.group("task") or trace_id
        if self.regex.groups:
            return match.group(1) or trace_id
        return match.group(0)


class Scorer:
    """What every trace of a part shares: the weights normalized and the rules parsed once,
    and the checks driven synchronously over a trace's batches (no event loop, no call sink).

    :meth:`score` gives the result :func:`toolscore.api.evaluate_batches` gives for the same
    gold and batches (the same checks, pipeline and reducer), and the calls per tool. Unless
    the records carry CI details or hard rules run, that result holds only what
    :func:`_fill` reads (:attr:`light`): the score's metrics, the credentials and forbidden
    calls, the failed tools, the findings and the input problems.
    """

    def __init__(self, cfg: Config) -> None:
        from ..api import builtin_checks, guard_first, pipeline_result
        from ..checks.secrets import ToolNames
        from ..hardrules.spec import combine
        from ..pipeline import Pipeline, run_sync
        from ..redact import active_pii
        from ..result import normalize_weights

        self.weights = normalize_weights(cfg.weights)
        self.rules = cfg.forbidden  # the run's rules, the pass rule's among them
        self.strict = cfg.strict
        self.details = cfg.details
        self.light = self._light(self.rules)
        """Records without CI details read only the score's metrics, the counts and the
        findings of the built-in checks (the expected-calls check then skips the trajectory
        steps, and no full metrics are computed)."""
        self._combine = combine
        self._gold: list[ToolCall] | None = None
        self._plan: Any = None
        """The expected-calls check's plan of the last gold (the gold lookup gives the trials
        of a task, read one after the other, the same list)."""
        self._tool_names = ToolNames(active_pii())
        """The tool names scanned for credentials by the part's traces so far (a trace's
        secrets check scans only the names new to the part; one looking for other kinds of
        personal data scans its own)."""
        self._builtin_checks = builtin_checks
        self._guard_first = guard_first
        self._pipeline_result = pipeline_result
        self._pipeline = Pipeline
        self._run_sync = run_sync

    def _light(self, rules: Any) -> bool:
        return not self.details and (
            rules is None
            or not (rules.hard or (rules.arguments is not None and rules.arguments.score))
        )

    def score(self, gold: list[ToolCall], batches: Iterable[Batch]) -> tuple[Any, Counter[str]]:
        """``(result, calls per tool)``. A gold with rules of its own (a keyed gold line's,
        a gold file's: :class:`~toolscore.gold.Gold`) adds them to the run's.

        Raises:
            InputError: the batches start with an input error (no call read).
        """
        own = getattr(gold, "rules", None)
        rules = self.rules if own is None else self._combine(own, self.rules)
        light = self.light if own is None else self._light(rules)
        plan = self._plan if gold is self._gold else None
        checks = self._builtin_checks(
            gold,
            rules,
            strict=self.strict,
            keep_details=False,
            plan=plan,
            score_only=light,
            tool_names=self._tool_names,
            weights=self.weights,
        )
        if plan is None:
            self._gold, self._plan = gold, getattr(checks[0], "plan", None)
        pipeline = self._pipeline(checks)
        tools: Counter[str] = Counter()
        if (
            light
            and isinstance(batches, list)
            and len(batches) == 2
            and batches[1].empty
            and pipeline.run_block(batches[0])
        ):
            # (a decoder's batches of a whole trace: its block, then its end)
            tools.update(batches[0].columns().tools)
            return self._result(pipeline, gold, light), tools
        guard_first = self._guard_first

        def counted() -> Iterator[Batch]:
            # every call read is completed by the end of the run (its result, or none), so
            # the calls read per tool are the completed ones a call sink would count
            for batch in guard_first(batches):
                if batch.n_calls:
                    tools.update(batch.columns().tools)
                elif not (batch.n_done or batch.findings or batch.error is not None):
                    continue  # nothing for a check to read (a decoder's end of a whole trace)
                yield batch

        self._run_sync(pipeline, counted())
        return self._result(pipeline, gold, light), tools

    def _result(self, pipeline: Any, gold: list[ToolCall], light: bool) -> Any:
        """The one reducer's result; without CI details or hard rules, only what a record
        reads (``score_only``)."""
        return self._pipeline_result(
            pipeline, gold, self.weights, include_extras=False, score_only=light
        )


_SCORER: list[Any] = [None, None]


def scorer_for(cfg: Config) -> Scorer:
    """The :class:`Scorer` of ``cfg`` (one per part: a part's Config is one object)."""
    if _SCORER[0] is not cfg:
        _SCORER[:] = [cfg, Scorer(cfg)]
    scorer: Scorer = _SCORER[1]
    return scorer


def evaluate_one(
    cfg: Config,
    trace_id: str,
    task: str,
    data: IO[bytes] | str,
    gold: list[ToolCall] | None,
    *,
    source: str,
    linenos: list[int] | None = None,
    offset: int | None = None,
    line: int | None = None,
    order: tuple[int, int] = (0, 0),
    decoder: Callable[[], Any] | None = None,
    scorer: Scorer | None = None,
) -> TraceRecord:
    """Evaluate one trace (bytes or a path) against its gold into a record.

    With ``decoder`` (a factory of the file's decoder), the trace's bytes are decoded by it
    directly: the format was detected once for the file, not once per trace; ``scorer``
    (made once per part) then scores the batches.
    """
    record = TraceRecord(
        trace_id=trace_id, task=task, source=source, line=line, offset=offset, order=order
    )
    calls = gold if gold is not None else []
    try:
        if decoder is not None and isinstance(data, io.BytesIO):
            dec = decoder()
            batches = [dec.feed(data.getvalue()), dec.close()]
            result, tools = (scorer or scorer_for(cfg)).score(calls, batches)
        else:
            from ..api import evaluate_trace

            counter = _ToolCounter()
            result = evaluate_trace(
                calls,
                data,
                format=cfg.format,
                weights=cfg.weights,
                forbidden=cfg.forbidden,
                strict=cfg.strict,
                on_calls=counter,
            )
            tools = counter.counts
    except (ToolscoreError, ValueError, OSError) as exc:
        record.status = "error"
        record.error = redact_secrets(_where(exc, source, linenos, line))
        record.expected_calls = len(calls)
        return record
    _fill(record, result, tools, cfg, gold is not None, source, linenos)
    return record


def evaluate_absent(
    cfg: Config, trace_id: str, gold: list[ToolCall], order: tuple[int, int]
) -> TraceRecord:
    """The record of gold without a trace, evaluated as a trace of zero calls (what
    ``evaluate(gold, [])`` gives), in the task its id names."""
    record = TraceRecord(trace_id=trace_id, task=_Tasks(cfg).task(trace_id, None), order=order)
    result, tools = scorer_for(cfg).score(gold, [])
    _fill(record, result, tools, cfg, True, "", None)
    return record


def _fill(
    record: TraceRecord,
    result: Any,
    tools: Counter[str],
    cfg: Config,
    has_gold: bool,
    source: str,
    linenos: list[int] | None,
) -> None:
    """The record's fields from an evaluation's result."""
    record.calls = result.trace_calls_count
    record.expected_calls = len(result.gold_calls)
    failed = dict(result.failed_tools)
    retried: dict[str, int] = {}
    kinds: dict[str, int] = {}
    for finding in result.findings:
        kind = f"{finding.check}/{finding.kind}"
        kinds[kind] = kinds.get(kind, 0) + 1
        if finding.kind == "retry_after_error" and finding.tool is not None:
            retried[finding.tool] = retried.get(finding.tool, 0) + 1
    record.findings = kinds
    record.failed_calls = sum(failed.values())
    record.retries = sum(retried.values())
    verdict = judge(result, cfg.criterion)
    record.violations = verdict.violations.total
    record.matches = dict(verdict.matches)
    if failed or retried:
        names = dict.fromkeys([*tools, *failed, *retried])
        record.tools = {
            tool: [tools.get(tool, 0), failed.get(tool, 0), retried.get(tool, 0)] for tool in names
        }
    else:
        record.tools = {tool: [count, 0, 0] for tool, count in tools.items()}
    if result.input_error is not None or result.input_problems:
        problem = _input_problem(result, source, linenos)
        if problem is not None:
            record.status = "error"
            record.error = redact_secrets(problem)
    if cfg.details:
        from .ci import trace_view

        record.ci = trace_view(result, source, linenos, record.error)
    if not has_gold:
        if record.status == "ok":
            record.status = "no_gold"
        return
    record.score = verdict.score
    record.grade = verdict.grade
    record.selection_accuracy = float(result.selection_accuracy)
    record.argument_f1 = float(result.argument_f1)
    record.sequence_accuracy = float(result.sequence_accuracy)
    recall = verdict.required_call_recall
    record.required_call_recall = None if recall is None else float(recall)
    record.passed = verdict.passed


def _line(rel: int | None, linenos: list[int] | None) -> int | None:
    if rel is None or linenos is None:
        return rel
    return linenos[rel - 1] if 0 < rel <= len(linenos) else None


def _where(exc: BaseException, source: str, linenos: list[int] | None, line: int | None) -> str:
    if isinstance(exc, InputError):
        at = _line(exc.line, linenos) if linenos is not None else exc.line
        if linenos is None and exc.line is None and exc.offset is not None:
            return f"{source}: byte {exc.offset}: {exc.problem}"
        where = (
            f"{source}:{at}"
            if at is not None
            else (f"{source}:{line}" if line is not None else source)
        )
        return f"{where}: {exc.problem}"
    return f"{source}: {exc}"


def _input_problem(result: Any, source: str, linenos: list[int] | None) -> str | None:
    error = result.input_error
    if error is not None:
        return _where(error, source, linenos, None)
    if not result.input_problems:
        return None
    first = next((f for f in result.input_findings if f.severity == "error"), None)
    if first is None:
        return None
    text: str = first.message
    loc = first.location
    if loc is not None and loc.line is not None:
        at = _line(loc.line, linenos)
        prefix = f"{loc.source}:{loc.line}: "
        text = f"{source}:{at}: {text.removeprefix(prefix)}"
    more = result.input_problems - 1
    return text + (f" (and {more} more)" if more > 0 else "")


YOUNG_COLLECTION_THRESHOLD = 50_000
"""Allocations between two of the cycle collector's young-generation passes while a dataset
is evaluated (Python's default: 700)."""


class _Collections:
    """The blocks inside :func:`fewer_collections` now, and the thresholds from before."""

    lock = threading.Lock()
    inside = 0
    before: tuple[int, ...] = ()


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Run the block with the cycle collector's young generation collected every
    :data:`YOUNG_COLLECTION_THRESHOLD` allocations; the thresholds from before are restored
    when the last such block ends (blocks in several threads, a Dask worker's, may overlap).

    Evaluating a trace makes thousands of short-lived containers (the checks, their states,
    the record), freed by their reference counts; at the default threshold the collector
    passes over the survivors every 700 allocations. Scoring the benchmark's traces with their
    decoded batches held, 167 us a trace against 192; a whole run on 2 workers, about 2%
    (more for a Dask worker, whose heap is larger). Cyclic garbage waits at most that many
    allocations longer.
    """
    state = _Collections
    with state.lock:
        if not state.inside:
            state.before = gc.get_threshold()
            gc.set_threshold(max(state.before[0], YOUNG_COLLECTION_THRESHOLD), *state.before[1:])
        state.inside += 1
    try:
        yield
    finally:
        with state.lock:
            state.inside -= 1
            if not state.inside:
                gc.set_threshold(*state.before)


def run_part(part: Part, cfg: Config) -> PartResult:
    """Evaluate every trace of ``part`` (under the run's ``--pii`` and ``--max-value-bytes``:
    a pool process or a Dask worker has its own context, so they travel in ``cfg``)."""
    from ..limits import value_limit
    from ..redact import pii_redaction

    with pii_redaction(cfg.pii), value_limit(cfg.max_value_bytes), fewer_collections():
        return _run_part(part, cfg)


def _run_part(part: Part, cfg: Config) -> PartResult:
    records = Records(cfg.records_dir)
    try:
        if part.scatter:
            read, scattered = _run_scatter(part, cfg, records)
            # (the progress: half its bytes; the gather parts count the other half)
            return PartResult(part.index, records.held, [read], part.size // 2, None, scattered)
        gold = gold_lookup(cfg.gold)
        tasks = _Tasks(cfg)
        if part.gather:
            _run_gather(part, cfg, gold, tasks, records)
            lines = [0]
        else:
            lines = [_run_input(part, item, cfg, gold, tasks, records) for item in part.inputs]
    finally:
        records.close()
    return PartResult(part.index, records.held, lines, part.size, records.path)


def _run_input(
    part: Part, item: Input, cfg: Config, gold: Any, tasks: _Tasks, records: Records
) -> int:
    """Evaluate one input (or its range); returns the lines read."""
    source = item.url
    records.last_id = None

    def order() -> tuple[int, int]:
        return (part.index, len(records))

    try:
        # (a range sent with its bytes: its offsets are the file's, from part.start on)
        sent = part.data is not None
        f = (
            open_lines(item.path, cfg.storage_options)
            if part.data is None
            else io.BytesIO(part.data)
        )
    except (OSError, InputError) as exc:
        error = str(exc) if isinstance(exc, InputError) else f"{source}: cannot read: {exc}"
        records.append(
            TraceRecord(
                trace_id=item.name,
                task=item.name,
                status="error",
                source=source,
                error=redact_secrets(error),
                order=order(),
            )
        )
        return 0
    with f:
        key = part.key
        head = b""
        if key is None:
            head = f.read(SNIFF_BYTES)
            f.seek(0)
            key = detect_key(head, cfg.trace_key)
            if key is None and is_otlp(head):
                return _run_otlp(f, head, item, cfg, gold, tasks, records, part)
        if key is None:
            # one trace: read as `toolscore eval` reads it, streaming
            f.close()
            name = item.name
            calls = _gold_or_error(gold, name, name, source, records, order)
            if calls is False:
                return 0
            with _remote(item, cfg) as data:
                records.append(
                    evaluate_one(
                        cfg,
                        name,
                        tasks.task(name, None),
                        data,
                        calls,  # type: ignore[arg-type]
                        source=source,
                        order=order(),
                    )
                )
            return 0
        ids = IdReader(key, cfg.task_key)
        if part.end is None:
            if not head:
                head = f.read(SNIFF_BYTES)
                f.seek(0)
            grouped = cfg.interleaved or interleaved(head, ids)
        else:
            grouped = False
        if grouped:
            lines_read = _run_grouped(f, ids, item, cfg, gold, tasks, records, part)
        else:
            lines_read = 0
            fmt = FileFormat(cfg, source)
            base = part.start if sent else 0
            span = (0, None) if sent else (part.start, part.end)
            for got in contiguous_traces(f, ids, *span):
                if isinstance(got, tuple):
                    lineno, offset, problem = got
                    if problem:
                        records.append(_line_error(source, lineno, base + offset, problem, order()))
                    else:
                        lines_read = lineno
                    continue
                got.offset += base
                _evaluate_trace(got, item, cfg, gold, tasks, records, part, fmt)
        _ended_early(f, item, part, records.last_id, records)
    return lines_read


def _ended_early(f: IO[bytes], item: Input, part: Part, last: str | None, records: Records) -> None:
    """When the compressed input read broke off (``f`` as it is read, or the decompressed
    copy ``item`` is, at its end: the last range tells), its error record: the traces read
    before it, the last one ``last``, are evaluated with the lines they had (the last may
    have had more)."""
    if isinstance(f, Decompressed) and f.fault is not None:
        problem, offset = f.fault, f.offset
    elif item.broken is not None and (part.end is None or part.end >= item.size):
        problem, offset = item.broken, item.size
    else:
        return
    after = f"; the last trace read: {last!r}" if last is not None else ""
    records.append(
        TraceRecord(
            trace_id="",
            task="",
            status="error",
            source=item.url,
            offset=offset,
            error=redact_secrets(f"{item.url}: {problem}{after}"),
            order=(part.index, len(records)),
        )
    )


def _is_remote(item: Input) -> bool:
    return "://" in item.url


@contextmanager
def _remote(item: Input, cfg: Config) -> Iterator[IO[bytes] | str]:
    """A single trace's input for :func:`evaluate_one`: a local path (read, and decompressed,
    by the trace readers), or a remote file opened here, decompressed when its name says so
    (a damaged stream raises as it is read, and is reported as the trace's error)."""
    if not _is_remote(item):
        yield item.url
        return
    with open_input(item.url, cfg.storage_options) as f:
        if is_compressed(item.url):
            with closing(decompressing(item.url, f)) as stream:
                yield stream
        else:
            yield f


def _line_error(
    source: str, lineno: int, offset: int, problem: str, order: tuple[int, int]
) -> TraceRecord:
    return TraceRecord(
        trace_id="",
        task="",
        status="error",
        source=source,
        line=lineno,
        offset=offset,
        error=f"{source}:{lineno}: {problem}",
        order=order,
    )


GOLD_ERRORS = (ToolscoreError, OSError, ValueError)
"""What looking up a trace's gold may raise: the trace then gets an error record."""


def gold_error_record(
    trace_id: str,
    source: str,
    exc: BaseException,
    *,
    line: int | None = None,
    order: tuple[int, int] = (0, 0),
) -> TraceRecord:
    """The record of a trace whose gold could not be read."""
    return TraceRecord(
        trace_id=trace_id, task=trace_id, status="error", source=source, line=line,
        error=f"gold of {trace_id}: {exc}", order=order,
    )  # fmt: skip


def _gold_or_error(
    gold: Any,
    trace_id: str,
    name: str | None,
    source: str,
    records: Records,
    order: Any,
    line: int | None = None,
) -> list[ToolCall] | bool | None:
    try:
        calls: list[ToolCall] | None = gold.get(trace_id, name)
    except GOLD_ERRORS as exc:
        records.append(gold_error_record(trace_id, source, exc, line=line, order=order()))
        return False
    return calls


class FileFormat:
    """A multi-trace file's format, detected on its first trace and reused for the others
    (detection samples the whole of a small trace: most of its cost when paid per trace)."""

    def __init__(self, cfg: Config, source: str) -> None:
        self.cfg = cfg
        self.source = source
        self.factory: Callable[[], Any] | None = None
        self.decided = False

    def decoder(self, data: bytes) -> Callable[[], Any] | None:
        if self.decided:
            return self.factory
        if data.count(b"\n") < 2:
            return None  # one line is read as a document: decide on a longer trace
        self.decided = True
        from ..errors import ToolscoreError
        from ..sources.custom import CustomDialect
        from ..sources.detect import detect, dialect_class
        from ..sources.jsonl import JsonlDecoder

        try:
            found = detect(data, format=self.cfg.format, final=True, source=self.source)
        except ToolscoreError:
            return None  # each trace says what is wrong with it, through evaluate_trace
        if found.layout != "jsonl":
            return None
        dialect = dialect_class(found.dialect)
        source, description = self.source, found.description
        named = self.cfg.format != "auto"
        last: list[Any] = []

        def make() -> Any:
            made = dialect(source)
            if last and isinstance(made, CustomDialect):
                # the keys the file's traces carried so far, known from the start
                made.expect_keys(last[0].extra_keys)
            last[:] = [made]
            decoder = JsonlDecoder(made, source, description)
            decoder.empty_is_error = not named
            return decoder

        self.factory = make
        return make


def _evaluate_trace(
    trace: Trace,
    item: Input,
    cfg: Config,
    gold: Any,
    tasks: _Tasks,
    records: Records,
    part: Part,
    fmt: FileFormat | None = None,
) -> None:
    trace_id = trace.trace_id or ""

    def order() -> tuple[int, int]:
        return (part.index, len(records))

    first = trace.linenos[0] if trace.linenos else None
    # with its line, the record of a piece of a scattered trace is regrouped (regroup.py)
    calls = _gold_or_error(gold, trace_id, None, item.url, records, order, first)
    if calls is False:
        return
    data = b"".join(trace.lines)
    record = evaluate_one(
        cfg,
        trace_id,
        tasks.task(trace_id, trace.task),
        io.BytesIO(data),
        calls,  # type: ignore[arg-type]
        source=item.url,
        linenos=trace.linenos,
        line=first,
        offset=trace.offset,
        order=order(),
        decoder=None if fmt is None else fmt.decoder(data),
    )
    if cfg.group_by is not None and cfg.group_by.line_fields and trace.lines:
        record.fields = cfg.group_by.read_line(trace.lines[0])  # (its first line is first)
    records.append(record)


def _run_grouped(
    f: IO[bytes],
    ids: IdReader,
    item: Input,
    cfg: Config,
    gold: Any,
    tasks: _Tasks,
    records: Records,
    part: Part,
) -> int:
    from .inputs import iter_lines

    if len(part.inputs) == 1:
        # the file's traces are grouped whole (the driver has no pieces to join): its
        # records may go to the driver a batch at a time, however many there are
        records.spill()
    grouper = Grouper(directory=cfg.spill_dir)
    lineno = 0
    last: str | None = None
    for offset, line in iter_lines(f):
        lineno += 1
        if not line.strip():
            continue
        placed = _place(ids.read(line), last, ids)
        if isinstance(placed, str):
            records.append(
                _line_error(item.url, lineno, offset, placed, (part.index, len(records)))
            )
            continue
        last = placed[0]
        grouper.add(last, placed[1], line, lineno, offset)
    fmt = FileFormat(cfg, item.url)
    for trace in grouper.traces():
        _evaluate_trace(trace, item, cfg, gold, tasks, records, part, fmt)
    return lineno


def range_lines(part: Part, cfg: Config) -> int:
    """The lines a byte range's worker reads (what its result's ``lines`` says), found again
    without evaluating anything: for the line numbers of the ranges after it when its
    result is lost."""
    assert part.end is not None and part.key is not None
    ids = IdReader(part.key, cfg.task_key)
    with open_lines(part.inputs[0].path, cfg.storage_options) as f:
        if part.scatter:  # the lines that start in it
            begin = next_line(f, part.start) if part.start else 0
            f.seek(begin)
            return count_line_starts(f, begin, part.end)
        lines = 0
        for got in contiguous_traces(f, ids, part.start, part.end):
            if isinstance(got, tuple) and not got[2]:
                lines = got[0]
        return lines


def _place(
    got: tuple[str | None, str | None] | None, last: str | None, ids: IdReader
) -> tuple[str, str | None] | str:
    """Where a line of a file whose lines interleave goes, given what :meth:`IdReader.read`
    gave for it (``got``) and the id of the last line before it that has one: its trace's
    ``(id, task)`` (a malformed line goes with that last trace), or the problem that makes
    it an error record."""
    if got is None:
        return (last, None) if last is not None else "malformed JSON line (not a JSON object)"
    trace_id, task = got
    if trace_id is None:
        return f"the line has no {ids.key!r}"
    return trace_id, task


def _run_scatter(part: Part, cfg: Config, records: Records) -> tuple[int, tuple[str, list[int]]]:
    """A byte range of a file whose lines interleave: each line that starts in it is written
    to its trace's partition (:func:`~.inputs.partition`), framed with its line number in the
    range and its offset; a malformed line goes with the trace of the line with an id before
    it (in an earlier range, maybe), as :func:`_run_grouped` has it. Lines without an id are
    error records here. Returns the lines read and ``(file, partition offsets)``."""
    assert part.end is not None and part.key is not None and cfg.scatter_dir is not None
    item = part.inputs[0]
    source = item.url
    ids = IdReader(part.key, cfg.task_key)
    buckets = [io.BytesIO() for _ in range(part.scatter)]
    lineno = 0
    with open_lines(item.path, cfg.storage_options) as f:
        begin = next_line(f, part.start) if part.start else 0
        last = id_before(f, begin, ids, named=True) if begin else None
        f.seek(begin)
        for pos, _, lines, got in id_chunks(f, ids, begin):
            for line, one in zip(lines, line_ids(got), strict=True):
                offset = pos
                pos += len(line) + 1
                if offset >= part.end:
                    break
                lineno += 1
                if one is BLANK:
                    continue
                placed = _place(one, last, ids)
                if isinstance(placed, str):
                    records.append(
                        _line_error(source, lineno, offset, placed, (part.index, len(records)))
                    )
                    continue
                last = placed[0]
                bucket = buckets[partition(last, part.scatter)]
                write_frame(bucket, last, placed[1], line + b"\n", lineno, offset)
            else:
                continue
            break
        _ended_early(f, item, part, last, records)
    # (a part run again writes a file of its own)
    path = in_location(cfg.scatter_dir, f"scatter-{part.index}-{uuid.uuid4().hex}")
    cuts = [0]
    with open_output(path, cfg.storage_options) as out:
        for bucket in buckets:
            out.write(bucket.getbuffer())
            cuts.append(cuts[-1] + bucket.tell())
    return lineno, (path, cuts)


def _run_gather(part: Part, cfg: Config, gold: Any, tasks: _Tasks, records: Records) -> None:
    """One partition of a file whose lines interleave: its lines from every range, grouped
    by trace id and evaluated, a trace at a time in order of its first line."""
    item = part.inputs[0]
    groups: dict[str, Trace] = {}
    sent = None if part.data is None else io.BytesIO(part.data)  # (the sections, in order)
    for path, start, end, base in part.gather:
        if sent is not None:
            add_frames(groups, sent, end - start, base)
            continue
        with open_input(path, cfg.storage_options) as f:
            f.seek(start)
            add_frames(groups, f, end - start, base)
    records.spill()  # (its traces are whole: the driver joins none)
    fmt = FileFormat(cfg, item.url)
    for trace in sorted(groups.values(), key=lambda t: t.offset):
        _evaluate_trace(trace, item, cfg, gold, tasks, records, part, fmt)


def _run_otlp(
    f: IO[bytes],
    head: bytes,
    item: Input,
    cfg: Config,
    gold: Any,
    tasks: _Tasks,
    records: Records,
    part: Part,
) -> int:
    if len(part.inputs) == 1:
        records.spill()  # (its traces are grouped whole: the driver joins none)
    grouper = Grouper(directory=cfg.spill_dir)
    lines = 0
    for lineno, offset, rs in otlp_items(f, head):
        lines = max(lines, lineno)
        if isinstance(rs, Exception):
            records.append(
                _line_error(
                    item.url, lineno, offset, f"malformed JSON: {rs}", (part.index, len(records))
                )
            )
            continue
        for trace_id, export in otlp_traces(rs):
            grouper.add(trace_id, None, export, lineno, offset)
    for trace in grouper.traces():
        _evaluate_trace(trace, item, cfg, gold, tasks, records, part)
    return lines
