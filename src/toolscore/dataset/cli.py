"""``toolscore eval GOLD TRACES`` on a dataset: the options, when they apply, the run.

``toolscore eval`` reads a dataset (and not one trace) when TRACES is a directory, a glob or a
URL, when GOLD is a directory or a JSON Lines gold keyed by trace id, or when a dataset option
is given (``--trace-key``, ``--task-key``, ``--task-regex``, ``--per-trace``,
``--min-pass-rate``, ``--engine``, ``--scheduler``, ``--shared-dir``, ``--interleaved``).
Anything else is one trace, read exactly as before.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from ..baseline import Comparison
    from ..reports.junit import Gate
    from .records import TraceRecord
    from .run import DatasetResult

__all__ = [
    "DatasetOptions",
    "DatasetRun",
    "run_dataset",
    "wants_dataset",
]


@dataclass
class DatasetOptions:
    """The dataset options of ``toolscore eval``."""

    trace_key: str | None = None
    task_key: str | None = None
    task_regex: str | None = None
    per_trace: str | None = None
    min_pass_rate: str | None = None
    pass_score: str = "A"
    pass_all_calls: bool = True
    pass_no_violations: bool = True
    engine: str | None = None
    scheduler: str | None = None
    shared_dir: str | None = None
    interleaved: bool = False
    default_gold: str | None = None
    """With a gold directory, the gold of traces it has none for (the GitHub Action's
    ``gold-file`` beside ``gold-dir``; no command-line option)."""
    gold_by_base_name: bool = False
    """Match gold by a trace file's base name too (the Action's ``gold-dir``)."""

    def any_given(self) -> bool:
        return any(
            (
                self.trace_key,
                self.task_key,
                self.task_regex,
                self.per_trace,
                self.min_pass_rate,
                self.engine,
                self.scheduler,
                self.shared_dir,
                self.interleaved,
            )
        )


TraceKeyOption = Annotated[
    str | None,
    typer.Option(
        "--trace-key",
        help="Dataset: the field holding each line's trace id (default: trace_id, session_id, "
        "conversation_id... whichever the first line has).",
    ),
]
TaskKeyOption = Annotated[
    str | None, typer.Option("--task-key", help="Dataset: the field naming each trace's task.")
]
TaskRegexOption = Annotated[
    str | None,
    typer.Option(
        "--task-regex",
        help="Dataset: a regex over the trace id giving its task (group 'task', else group 1, "
        "else the match). Default: ids ending in /trialN, _runN... share a task.",
    ),
]
PerTraceOption = Annotated[
    str | None,
    typer.Option(
        "--per-trace",
        help="Dataset: write each trace's record to this JSON Lines (or .parquet) file.",
    ),
]
MinPassRateOption = Annotated[
    str | None,
    typer.Option(
        "--min-pass-rate", help="Dataset: exit 1 when the pass rate is below this (0-1 or 80%)."
    ),
]
PassScoreOption = Annotated[
    str,
    typer.Option(
        "--pass-score", help="Dataset: a trace passes from this score (0-1) or grade (A-F)."
    ),
]
PassAllCallsOption = Annotated[
    bool,
    typer.Option(
        "--pass-all-calls/--pass-any-calls",
        help="Dataset: a pass needs every required gold call completed.",
    ),
]
PassNoViolationsOption = Annotated[
    bool,
    typer.Option(
        "--pass-no-violations/--pass-allow-violations",
        help="Dataset: a pass needs no forbidden call and no credential.",
    ),
]
EngineOption = Annotated[
    str | None,
    typer.Option("--engine", help="Dataset: local (a process pool, default), dask or inline."),
]
SchedulerOption = Annotated[
    str | None,
    typer.Option("--scheduler", help="Dataset: the Dask scheduler, tcp://HOST:PORT."),
]
SharedDirOption = Annotated[
    str | None,
    typer.Option(
        "--shared-dir",
        help="Dataset on Dask: an existing directory (a path all machines mount, or a URL "
        "such as s3://bucket/tmp/) the workers and this process share, when they do not share "
        "this machine's disk: large compressed and interleaved files then go to the workers "
        "through it, not through this machine.",
    ),
]
InterleavedOption = Annotated[
    bool,
    typer.Option(
        "--interleaved", help="Dataset: lines of one trace may be anywhere in their file."
    ),
]


@dataclass
class DatasetRun:
    """A finished dataset run, as :func:`run_dataset`'s ``report`` receives it (before the
    result's temporary files are removed)."""

    result: DatasetResult
    gates: list[Gate] = field(default_factory=list)
    """Every gate asked for, passed or failed, the baseline's included."""
    comparison: Comparison | None = None
    """The run against ``--baseline``, when given."""
    status: int = 0
    """The exit status ``toolscore eval`` gives the run."""


def wants_dataset(gold: str, trace: str, options: DatasetOptions) -> bool:
    """Whether ``toolscore eval GOLD TRACES`` reads a dataset (see the module's doc)."""
    from .shape import gold_is_dataset, is_url, trace_is_dataset

    if options.any_given():
        return True
    if trace != "-" and (is_url(trace) or os.path.isdir(trace) or any(c in trace for c in "*?[")):
        return not os.path.isfile(trace)
    return gold_is_dataset(gold) or trace_is_dataset(trace)


def _rate(text: str) -> float:
    value = text.strip()
    try:
        rate = float(value[:-1]) / 100 if value.endswith("%") else float(value)
    except ValueError:
        raise ValueError(f"--min-pass-rate: expected 0-1 or a percentage, got {text!r}") from None
    if not 0 <= rate <= 1:
        raise ValueError(f"--min-pass-rate: expected 0-1 or a percentage, got {text!r}")
    return rate


def run_dataset(
    opts: Any,
    options: DatasetOptions,
    *,
    on_record: Callable[[TraceRecord], None] | None = None,
    report: Callable[[DatasetRun], int] | None = None,
) -> int:
    """Run ``toolscore eval`` on a dataset; returns the exit status.

    ``opts`` is the command's :class:`toolscore.cli.EvalOptions`. A caller driving the
    command (the GitHub Action, :mod:`toolscore.action`) may also take each record as it
    arrives (``on_record``, with its CI view: ``record.ci``) and the finished run
    (``report``, whose return value is then the exit status).
    """
    from .._cliutil import error_line, failure_status, parse_run_options
    from .._exitcodes import Outcome, exit_code
    from ..errors import ToolscoreError
    from ..verdict import parse_fail_under
    from .records import PassCriterion

    parsed = parse_run_options(opts.weights, opts.fail_under)
    if isinstance(parsed, int):
        return parsed
    weights, threshold = parsed
    try:
        min_rate = None if options.min_pass_rate is None else _rate(options.min_pass_rate)
        pass_score = parse_fail_under(options.pass_score)
    except ValueError as exc:
        error_line(str(exc).replace("--fail-under", "--pass-score"))
        return exit_code(Outcome(usage_error=True))
    criterion = PassCriterion(
        min_score=pass_score,
        all_calls=options.pass_all_calls,
        no_violations=options.pass_no_violations,
    )
    from ..outputs import refuse_overlap

    ci_options = getattr(opts, "ci", None)
    try:
        inputs, outputs = _paths(opts, options)
        refuse_overlap(inputs, outputs)
    except ToolscoreError as exc:
        return failure_status(exc)
    ci = None
    if ci_options is not None and ci_options.any:
        from .ci import DatasetCi

        try:
            ci = DatasetCi(ci_options, criterion)  # reads --baseline before anything runs
        except ToolscoreError as exc:
            return failure_status(exc)
    try:
        return _run(opts, options, criterion, weights, threshold, min_rate, ci, on_record, report)
    finally:
        if ci is not None:
            ci.close()


def _run(
    opts: Any,
    options: DatasetOptions,
    criterion: Any,
    weights: Any,
    threshold: float | str | None,
    min_rate: float | None,
    ci: Any,
    extra: Callable[[TraceRecord], None] | None = None,
    report: Callable[[DatasetRun], int] | None = None,
) -> int:
    from .._cliutil import error_line, failure_status
    from .._exitcodes import Outcome, exit_code
    from ..errors import ToolscoreError
    from ..outputs import write_report
    from ..reports.console import make_console
    from ..verdict import passes
    from .reports import render_html, render_markdown, summary_renderable, write_json
    from .run import evaluate_dataset

    progress, on_progress = _progress()
    take = None if ci is None else ci.add
    if extra is not None:
        take = extra if take is None else _both(take, extra)
    try:
        with progress:
            result = evaluate_dataset(
                opts.gold,
                opts.trace,
                format=opts.format,
                weights=weights,
                forbidden=opts.forbidden,
                trace_key=options.trace_key,
                task_key=options.task_key,
                task_regex=options.task_regex,
                criterion=criterion,
                per_trace=options.per_trace,
                engine=options.engine or ("dask" if options.scheduler else "local"),
                workers=opts.workers,
                scheduler=options.scheduler,
                shared_dir=options.shared_dir,
                interleaved=options.interleaved,
                default_gold=options.default_gold,
                gold_by_base_name=options.gold_by_base_name,
                on_progress=on_progress,
                on_problem=lambda text: error_line(text),
                details=take is not None,
                on_record=take,
            )
    except (ToolscoreError, ValueError, OSError) as exc:
        return failure_status(exc)
    try:
        write_json(result, opts.output)
        if opts.markdown:
            write_report(opts.markdown, render_markdown(result).encode("utf-8"))
        if opts.html:
            write_report(opts.html, render_html(result).encode("utf-8"))
    except OSError as exc:
        error_line(f"cannot write a report: {exc}")
        return exit_code(Outcome(input_error=True))
    console = make_console()
    console.print(summary_renderable(result))
    from rich.text import Text

    console.print(Text(f"> JSON report: {opts.output}"))
    for label, path in (
        ("Per-trace records", options.per_trace),
        ("HTML report", opts.html),
        ("Markdown report", opts.markdown),
    ):
        if path:
            console.print(Text(f"> {label}: {path}"))
    console.file.flush()

    from ..reports.junit import Gate

    gates: list[Gate] = []

    def below_gate(name: str, ok: bool, value: str) -> bool:
        """Add the gate ``--NAME``; True (after a FAIL line) when ``value`` is below it."""
        why = f"{value} is below --{name}"
        gates.append(Gate(name, ok, "" if ok else why))
        if not ok:
            sys.stderr.write(f"FAIL {why}\n")
        return not ok

    below = False
    mean = result.mean
    if threshold is not None:
        ok = mean is not None and (
            passes(mean, threshold) or (isinstance(threshold, float) and mean >= threshold - 1e-9)
        )
        shown = "no score" if mean is None else f"mean score {mean:.1%}"
        below = below_gate(f"fail-under {opts.fail_under}", ok, shown)
    if min_rate is not None:
        rate = result.pass_rate
        ok = rate is not None and rate >= min_rate - 1e-12
        shown = "no trace judged" if rate is None else f"pass rate {rate:.1%}"
        below = below_gate(f"min-pass-rate {options.min_pass_rate}", ok, shown) or below
    violations = False
    if opts.fail_on_violations:
        count = result.aggregate.violations
        why = f"{count} violation(s) found"
        gates.append(Gate("fail-on-violations", not count, why if count else ""))
        if count:
            violations = True
            sys.stderr.write(f"ERROR {why} (--fail-on-violations)\n")
    errors = result.input_errors
    if errors:
        first = next((r.error for r in result.errors if r.error), "")
        error_line(f"{errors} trace(s) or part(s) could not be read whole (first: {first})")
    if result.gold_problems:
        first = result.problems[0] if result.problems else ""  # the gold's come first
        error_line(f"{result.gold_problems} gold line(s) could not be used (first: {first})")
        errors += result.gold_problems
    sys.stderr.flush()
    comparison = None
    if ci is not None:
        from .ci import finish_ci

        try:
            comparison, gates = finish_ci(ci, gates, console, opts.markdown)
        except OSError as exc:
            error_line(f"cannot write a report: {exc}")
            result.close()
            return exit_code(Outcome(input_error=True))
    regression = comparison is not None and not comparison.passed
    code = exit_code(
        Outcome(
            input_error=errors > 0,
            violations=violations,
            below_threshold=below,
            regression=regression,
        )
    )
    try:
        if report is not None:
            code = report(DatasetRun(result, gates, comparison, code))
    finally:
        result.close()
    return code


def _both(
    first: Callable[[TraceRecord], None], second: Callable[[TraceRecord], None]
) -> Callable[[TraceRecord], None]:
    def take(record: TraceRecord) -> None:
        first(record)
        second(record)

    return take


def _paths(
    opts: Any, options: DatasetOptions
) -> tuple[list[tuple[str, str | None]], list[tuple[str, str | None]]]:
    """The run's inputs and outputs, for :func:`toolscore.outputs.refuse_overlap` (with the
    CI options', :func:`toolscore._ci_cli.ci_paths`)."""
    inputs: list[tuple[str, str | None]] = [
        ("the gold", opts.gold),
        ("the traces", opts.trace),
        ("the rules", opts.forbidden),
    ]
    outputs: list[tuple[str, str | None]] = [
        ("-o", opts.output),
        ("--markdown", opts.markdown),
        ("--html", opts.html),
        ("--per-trace", options.per_trace),
    ]
    ci = getattr(opts, "ci", None)
    if ci is not None:
        from .._ci_cli import ci_paths

        ci_inputs, ci_outputs = ci_paths(ci)
        inputs += ci_inputs
        outputs += ci_outputs
    return inputs, outputs


class _NoProgress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _progress() -> tuple[Any, Any]:
    """A rich progress bar on stderr when it is a terminal: traces done and traces/s."""
    if not sys.stderr.isatty():
        return _NoProgress(), None
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn("Evaluating"),
        BarColumn(),
        TextColumn("{task.fields[traces]} traces ({task.fields[rate]:,.0f}/s)"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = progress.add_task("dataset", total=None, traces="0", rate=0.0)
    started = time.monotonic()

    def update(records: int, expected: int | None, done_bytes: int, total_bytes: int) -> None:
        elapsed = time.monotonic() - started
        traces = f"{records:,}" if expected is None else f"{records:,} of {expected:,}"
        progress.update(
            task,
            completed=done_bytes,
            total=total_bytes,
            traces=traces,
            rate=records / elapsed if elapsed > 0 else 0.0,
        )

    return progress, update
