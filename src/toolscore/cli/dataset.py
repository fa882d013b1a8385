"""``toolscore eval GOLD TRACES`` on a dataset: when it applies, and the run.

``toolscore eval`` reads a dataset (and not one trace) when TRACES is a directory, a glob or a
URL, when GOLD is a directory or a JSON Lines gold keyed by trace id, or when a dataset option
is given (``--trace-key``, ``--task-key``, ``--task-regex``, ``--group-by``, ``--k``,
``--per-trace``, ``--min-pass-rate``, ``--engine``, ``--scheduler``, ``--shared-dir``,
``--interleaved``, ``--follow-symlinks``).
Anything else is one trace, read exactly as before.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._exitcodes import Outcome, exit_code
from ..dataset.shape import gold_is_dataset, is_url, trace_is_dataset
from ..errors import ToolscoreError
from ..verdict import parse_fail_under, passes
from . import _ci
from ._options import DatasetOptions
from ._progress import dataset_progress
from ._util import error_line, failure_status, parse_run_options

if TYPE_CHECKING:
    from ..baseline import Comparison
    from ..dataset.records import TraceRecord
    from ..dataset.run import DatasetResult
    from ..reports.junit import Gate

__all__ = [
    "DatasetOptions",
    "DatasetRun",
    "run_dataset",
    "wants_dataset",
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


def wants_dataset(gold: str | None, trace: str, options: DatasetOptions) -> bool:
    """Whether ``toolscore eval GOLD TRACES`` reads a dataset (see the module's doc)."""
    if options.any_given():
        return True
    if trace != "-" and (is_url(trace) or os.path.isdir(trace) or any(c in trace for c in "*?[")):
        return not os.path.isfile(trace)
    return (gold is not None and gold_is_dataset(gold)) or trace_is_dataset(trace)


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
    # the dataset machinery loads only when a dataset is evaluated: start-up
    from ..outputs import refuse_overlap
    from ..verdict import PassCriterion, parse_pass

    if getattr(opts, "csv", None):  # the CSV report is one trace's metrics
        error_line("--csv is for one trace; a dataset has -o, --per-trace, --markdown, --html")
        return exit_code(Outcome(usage_error=True))
    parsed = parse_run_options(opts.weights, opts.fail_under)
    if isinstance(parsed, int):
        return parsed
    weights, threshold = parsed
    try:
        min_rate = None if options.min_pass_rate is None else _rate(options.min_pass_rate)
        pass_score = parse_fail_under(options.pass_score)
        rule = getattr(opts, "pass_rule", None)
        criterion = (
            parse_pass(rule)
            if rule is not None
            else PassCriterion(
                min_score=pass_score,
                all_calls=options.pass_all_calls,
                no_violations=options.pass_no_violations,
            )
        )
    except ValueError as exc:
        error_line(str(exc).replace("--fail-under", "--pass-score"))
        return exit_code(Outcome(usage_error=True))
    ci_options = getattr(opts, "ci", None)
    try:
        inputs, outputs = _paths(opts, options)
        refuse_overlap(inputs, outputs)
    except ToolscoreError as exc:
        return failure_status(exc)
    ci = None
    if ci_options is not None and ci_options.any:
        # CI outputs load only when asked for: start-up
        from ..dataset.ci import DatasetCi

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
    # the dataset machinery, reports and rich load only when a dataset is evaluated: start-up
    from rich.text import Text

    from ..dataset.reports import render_html, render_markdown, summary_renderable, write_json
    from ..dataset.run import evaluate_dataset
    from ..outputs import write_report
    from ..reports.console import make_console
    from ..reports.junit import Gate

    take = None if ci is None else ci.add
    if extra is not None:
        take = extra if take is None else _both(take, extra)
    try:
        with dataset_progress() as on_progress:
            result = evaluate_dataset(
                opts.gold,
                opts.trace,
                format=opts.format,
                weights=weights,
                forbidden=opts.forbidden,
                trace_key=options.trace_key,
                task_key=options.task_key,
                task_regex=options.task_regex,
                group_by=options.group_by,
                k=options.k,
                criterion=criterion,
                per_trace=options.per_trace,
                engine=options.engine or ("dask" if options.scheduler else "local"),
                workers=opts.workers,
                scheduler=options.scheduler,
                dask_dashboard=options.dask_dashboard,
                shared_dir=options.shared_dir,
                interleaved=options.interleaved,
                follow_symlinks=options.follow_symlinks,
                missing_trace=options.missing_trace,
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
    console.print(Text(f"> JSON report: {opts.output}"))
    for label, path in (
        ("Per-trace records", options.per_trace),
        ("HTML report", opts.html),
        ("Markdown report", opts.markdown),
    ):
        if path:
            console.print(Text(f"> {label}: {path}"))
    console.file.flush()

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
        ok = mean is not None and (passes(mean, threshold))
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
        from ..dataset.ci import finish_ci  # CI outputs load only when asked for: start-up

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
    CI options', :func:`toolscore.cli._ci.ci_paths`)."""
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
        ci_inputs, ci_outputs = _ci.ci_paths(ci)
        inputs += ci_inputs
        outputs += ci_outputs
    return inputs, outputs
