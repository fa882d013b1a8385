"""Scoring a dataset's trace in a worker: the run's :class:`Config`, the :class:`Scorer` a
part's traces share (the one pipeline and reducer, the rules parsed once), a trace evaluated
into its record (:func:`evaluate_one`, gold without a trace by :func:`evaluate_absent`), and
the record's fields filled from the result and its verdict (:func:`_fill`)."""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from ..api import builtin_checks, evaluate_trace, guard_first, pipeline_result
from ..calls import Batch, ToolCall
from ..checks.secrets import ToolNames
from ..columns import Columns
from ..errors import InputError, ToolscoreError
from ..hardrules.spec import RuleSet, combine
from ..limits import ReadLimits
from ..pipeline import Pipeline, run_sync
from ..redact import active_pii, redact_secrets
from ..result import normalize_weights
from ..verdict import PassCriterion, judge
from ._feed import fed
from ._taskid import DEFAULT_TASK_REGEX, default_task
from .ci import trace_view
from .gold import GoldSpec
from .groups import GroupBy
from .records import TraceRecord

MISSING_TRACE = ("empty", "skip")
"""What ``--missing-trace`` may say of gold without a trace (see :attr:`Config.missing_trace`)."""

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
    read_limits: ReadLimits | None = None
    """The run's :class:`~toolscore.limits.ReadLimits`; ``None``: the defaults."""
    details: bool = False
    """Records carry a :class:`~.ci.TraceView` (for JUnit, SARIF, baselines)."""
    missing_trace: str = "empty"
    """Gold without a trace: ``empty`` scores it as a trial of zero calls (a task whose right
    answer is "make no call" can pass); ``skip`` gives it the status ``no_trace``."""
    group_by: GroupBy | None = None
    """The breakdowns (``--group-by``): the fields they name are read from each trace's
    first line into its record (:attr:`~.records.TraceRecord.fields`)."""


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
        if not self.explicit:  # the default regex, in linear time
            return default_task(trace_id) or trace_id
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
        self.weights = normalize_weights(cfg.weights)
        self.rules = cfg.forbidden  # the run's rules, the pass rule's among them
        self.strict = cfg.strict
        self.details = cfg.details
        self.light = self._light(self.rules)
        """Records without CI details read only the score's metrics, the counts and the
        findings of the built-in checks (the expected-calls check then skips the trajectory
        steps, and no full metrics are computed)."""
        self._tool_names = ToolNames(active_pii())
        """The tool names scanned for credentials by the part's traces so far (a trace's
        secrets check scans only the names new to the part; one looking for other kinds of
        personal data scans its own)."""

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
        rules = self.rules if own is None else combine(own, self.rules)
        light = self.light if own is None else self._light(rules)
        checks = builtin_checks(
            gold,
            rules,
            strict=self.strict,
            keep_details=False,
            score_only=light,
            tool_names=self._tool_names,
            weights=self.weights,
        )
        pipeline = Pipeline(checks)
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

        def counted() -> Iterator[Batch]:
            # every call read is completed by the end of the run (its result, or none), so
            # the calls read per tool are the completed ones a call sink would count
            for batch in guard_first(batches):
                if batch.n_calls:
                    tools.update(batch.columns().tools)
                elif not (batch.n_done or batch.findings or batch.error is not None):
                    continue  # nothing for a check to read (a decoder's end of a whole trace)
                yield batch

        run_sync(pipeline, counted())
        return self._result(pipeline, gold, light), tools

    def _result(self, pipeline: Any, gold: list[ToolCall], light: bool) -> Any:
        """The one reducer's result; without CI details or hard rules, only what a record
        reads (``score_only``)."""
        return pipeline_result(pipeline, gold, self.weights, include_extras=False, score_only=light)


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
            batches = fed(dec, data.getvalue())  # (a large trace: a chunk at a time)
            result, tools = (scorer or scorer_for(cfg)).score(calls, batches)
        else:
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
    counted = result.finding_counts
    if counted is None:  # (a result made without the pipeline's counts)
        counted = Counter((f.check, f.kind, f.tool, f.rule) for f in result.findings)
    for (check, kind, tool, _), n in counted.items():  # every finding, kept or not
        name = f"{check}/{kind}"
        kinds[name] = kinds.get(name, 0) + n
        if kind == "retry_after_error" and tool is not None:
            retried[tool] = retried.get(tool, 0) + n
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
        record.ci = trace_view(result, source, linenos, record.error, has_gold)
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
