"""``toolscore eval GOLD TRACE`` on one trace (a dataset goes to :mod:`toolscore.cli.dataset`).

The command is thin: it parses options, calls :func:`toolscore.api.evaluate_trace`, writes the
reports and prints the summary; exit statuses come from :func:`toolscore._exitcodes.exit_code`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer

from .._exitcodes import EXIT_ERROR, Outcome, exit_code
from .._interrupt import active, run_until_signal
from ..errors import ToolscoreError
from ..limits import (
    DEFAULT_HTTP_TIMEOUT,
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    DEFAULT_MAX_TRACE_BYTES,
    DEFAULT_MAX_VALUE_BYTES,
)
from ..sanitize import shown, visible
from ..verdict import judge, passes
from . import _ci
from . import _options as opt
from ._options import EvalOptions, RunOptions, eval_options
from ._progress import trace_progress, wants_progress
from ._util import (
    apply_settings,
    error_line,
    failure_status,
    internal_error_status,
    is_closed_output,
    os_error_text,
    parse_run_options,
)
from .dataset import run_dataset, wants_dataset

if TYPE_CHECKING:
    from ..calls import ToolCall
    from ..reports import ReportResult
    from ..reports.json import JsonReport

__all__ = ["eval_command", "eval_paths", "final_status", "print_notes", "run_eval"]


def eval_command(
    gold_file: opt.GoldArgument,
    trace_file: opt.TraceArgument = None,
    format: opt.FormatOption = "auto",
    weight: opt.WeightOption = None,
    output: opt.OutputOption = "toolscore.json",
    markdown: opt.MarkdownOption = None,
    html: opt.HtmlOption = None,
    csv: opt.CsvOption = None,
    verbose: opt.VerboseOption = False,
    fail_under: opt.FailUnderOption = None,
    forbidden: opt.ForbiddenOption = None,
    fail_on_violations: opt.FailOnViolationsOption = False,
    pii: opt.PiiOption = False,
    workers: opt.WorkersOption = 0,
    save_baseline: opt.SaveBaselineOption = None,
    baseline: opt.BaselineOption = None,
    baseline_tolerance: opt.BaselineToleranceOption = 0.0,
    junit: opt.JunitOption = None,
    sarif: opt.SarifOption = None,
    max_value_bytes: opt.MaxValueBytesOption = DEFAULT_MAX_VALUE_BYTES,
    max_decompressed_bytes: opt.MaxDecompressedBytesOption = DEFAULT_MAX_DECOMPRESSED_BYTES,
    max_trace_bytes: opt.MaxTraceBytesOption = DEFAULT_MAX_TRACE_BYTES,
    http_timeout: opt.HttpTimeoutOption = DEFAULT_HTTP_TIMEOUT,
    trace_key: opt.TraceKeyOption = None,
    task_key: opt.TaskKeyOption = None,
    task_regex: opt.TaskRegexOption = None,
    group_by: opt.GroupByOption = None,
    k: opt.KOption = None,
    per_trace: opt.PerTraceOption = None,
    min_pass_rate: opt.MinPassRateOption = None,
    pass_score: opt.PassScoreOption = "A",
    pass_all_calls: opt.PassAllCallsOption = True,
    pass_no_violations: opt.PassNoViolationsOption = True,
    engine: opt.EngineOption = None,
    scheduler: opt.SchedulerOption = None,
    dask_dashboard: opt.DaskDashboardOption = False,
    shared_dir: opt.SharedDirOption = None,
    interleaved: opt.InterleavedOption = False,
    follow_symlinks: opt.FollowSymlinksOption = False,
    missing_trace: opt.MissingTraceOption = "empty",
    pass_rule: opt.PassRuleOption = None,
    no_side_effects: opt.NoSideEffectsOption = False,
) -> None:
    """Score a trace against a gold file and report behavior and safety findings.

    TRACES may also be a dataset (a directory, a glob, a URL, or a file of many traces with
    --trace-key): each trace is then scored against its own gold (one gold file for all, a
    JSON Lines gold keyed by trace id, or a directory of gold files)."""
    opts, dataset = eval_options(locals())
    apply_settings(opts)
    try:  # one handling of signals for one trace and a dataset, in every engine
        if wants_dataset(opts.gold, opts.trace, dataset):
            code = run_until_signal(lambda: run_dataset(opts, dataset), _interrupted)
        else:
            code = run_until_signal(lambda: run_eval(opts), _interrupted)
    except Exception as exc:
        if opts.verbose and not is_closed_output(exc):
            raise
        code = internal_error_status(exc, " (run with -v for details)")
    raise typer.Exit(code)


def run_eval(opts: EvalOptions) -> int:
    """Run ``toolscore eval``: evaluate, write the reports, print the summary, apply gates.

    Returns:
        The exit status (see :func:`toolscore._exitcodes.exit_code`).
    """
    # the evaluation loads only when eval runs, not for --help or --version: start-up
    from ..gold import read_gold_file
    from ..outputs import refuse_overlap
    from ..reports.json import FindingSpool, JsonReport

    parsed = parse_run_options(opts.weights, opts.fail_under)
    if isinstance(parsed, int):
        return parsed
    weights, threshold = parsed
    try:
        refuse_overlap(*eval_paths(opts))
    except ToolscoreError as exc:
        return failure_status(exc)
    try:
        ci = _ci.prepare(opts.ci)
        gold = None if opts.gold is None else read_gold_file(opts.gold)
    except (ToolscoreError, ValueError, OSError) as exc:
        return failure_status(exc)
    try:
        # written as the trace is read, next to its place (a part read by another process
        # is spooled there too: copy_file_range takes it in the kernel, within one mount)
        report = JsonReport(opts.output, gold or [])
    except OSError as exc:
        error_line(f"cannot write the JSON report {opts.output}: {exc.strerror or exc}")
        return EXIT_ERROR
    with report, FindingSpool(report.directory) as findings:
        try:
            result = _evaluate(opts, gold, weights, report, findings)
        except (ToolscoreError, ValueError, OSError) as exc:
            return failure_status(exc)
        try:
            report.finish(result, findings=findings)
        except OSError as exc:
            if is_closed_output(exc):  # -o /dev/stdout | head -1
                raise
            error_line(f"cannot write the JSON report {opts.output}: {exc.strerror or exc}")
            return EXIT_ERROR
    try:
        _write_reports(result, opts)
    except OSError as exc:
        error_line(f"cannot write a report: {os_error_text(exc)}")
        return EXIT_ERROR

    console = _print_summary(result, opts)
    regression = False
    if opts.ci.any:
        try:
            regression = _ci.finish(
                ci,
                result,
                trace_id=opts.trace,
                trace_path=None if opts.trace == "-" else opts.trace,
                fail_under=opts.fail_under,
                threshold=threshold,
                fail_on_violations=opts.fail_on_violations,
                console=console,
                markdown=opts.markdown,
            )
        except OSError as exc:
            error_line(f"cannot write a report: {os_error_text(exc)}")
            return EXIT_ERROR
    return final_status(result, opts, threshold, regression=regression)


def _evaluate(
    opts: EvalOptions,
    gold: list[ToolCall] | None,
    weights: dict[str, float] | None,
    on_calls: JsonReport,
    on_finding: Callable[[list[Any]], None],
) -> ReportResult:
    # the evaluation loads only when eval runs, not for --help or --version: start-up
    from ..api import evaluate_trace

    def run(spool: Any, on_bytes: Callable[[int], None] | None) -> ReportResult:
        result: ReportResult = evaluate_trace(
            gold,
            opts.trace,
            format=opts.format,
            validate_side_effects=not opts.no_side_effects,
            weights=weights,
            forbidden=opts.forbidden,
            on_finding=on_finding,
            on_calls=spool,
            workers=opts.workers,
            on_bytes=on_bytes,
            pass_rule=opts.pass_rule,
        )
        return result

    stop = active()
    check = None if stop is None else stop.check_bytes  # a first Ctrl-C ends the read there
    if not wants_progress(opts.trace):
        return run(on_calls, check)
    with trace_progress(opts.trace, on_calls, check) as (spool, advance):
        return run(spool, advance)


def _write_reports(result: ReportResult, opts: EvalOptions) -> None:
    """The HTML, CSV and Markdown reports asked for."""
    if opts.html:
        # a report's writer loads only when the report is asked for: start-up
        from ..reports.html import write_html

        write_html(result, opts.html)
    if opts.csv:
        # a report's writer loads only when the report is asked for: start-up
        from ..reports.csv import write_csv

        write_csv(result, opts.csv)
    if opts.markdown:
        # a report's writer loads only when the report is asked for: start-up
        from ..reports.markdown import write_markdown

        write_markdown(result, opts.markdown)


def eval_paths(
    opts: EvalOptions,
) -> tuple[list[tuple[str, str | None]], list[tuple[str, str | None]]]:
    """``eval``'s inputs and outputs, for :func:`toolscore.outputs.refuse_overlap` (an option
    that writes a file adds itself to the second list)."""
    inputs = [
        ("the gold file", opts.gold),
        ("the trace", opts.trace),
        ("the rule file", opts.forbidden),
    ]
    outputs = [("-o", opts.output), ("--markdown", opts.markdown), ("--html", opts.html)]
    outputs.append(("--csv", opts.csv))
    ci_inputs, ci_outputs = _ci.ci_paths(opts.ci)
    inputs += ci_inputs
    outputs += ci_outputs
    return inputs, outputs


def _gates(result: ReportResult, opts: RunOptions, threshold: float | str | None) -> Outcome:
    verdict = judge(result)
    violations = False
    below = False
    if opts.fail_on_violations and verdict.violations.total:
        violations = True
        count = verdict.violations.total
        sys.stderr.write(
            f"ERROR {count} violation(s) found ({verdict.violations.describe()}) "
            "(--fail-on-violations)\n"
        )
    rule = getattr(opts, "pass_rule", None)
    if rule is not None and verdict.passed is False:
        below = True
        reasons = "; ".join(verdict.criterion.reasons(verdict))
        sys.stderr.write(f"FAIL the trace does not pass --pass '{rule}': {reasons}\n")
    if threshold is not None and verdict.score is not None:
        score = verdict.score
        under = not passes(score, threshold)
        if isinstance(threshold, str):
            what = f"grade {verdict.grade} is below --fail-under {threshold}"
        else:
            what = f"score {score:.1%} is below --fail-under {opts.fail_under}"
        if under:
            below = True
            sys.stderr.write(f"FAIL {what}\n")
    sys.stderr.flush()
    return Outcome(violations=violations, below_threshold=below)


def final_status(
    result: ReportResult,
    opts: RunOptions,
    threshold: float | str | None,
    *,
    regression: bool = False,
) -> int:
    """Apply the gates; an input error met mid-trace, or input skipped as unreadable, is
    reported and outranks them. ``regression``: ``--baseline`` found the run worse."""
    outcome = _gates(result, opts, threshold)
    if regression:
        sys.stderr.write("FAIL the run regressed against --baseline\n")
        sys.stderr.flush()
        outcome = Outcome(
            violations=outcome.violations, below_threshold=outcome.below_threshold, regression=True
        )
    skipped = result.input_problems
    if skipped:
        first = next((f.message for f in result.input_findings if f.severity == "error"), "")
        noun = "part of the trace was" if skipped == 1 else "parts of the trace were"
        error_line(f"{skipped} {noun} unreadable and skipped (first: {first})")
    if result.input_error is not None:
        error_line(str(result.input_error))
    if skipped or result.input_error is not None:
        outcome = Outcome(
            input_error=True,
            violations=outcome.violations,
            below_threshold=outcome.below_threshold,
            regression=outcome.regression,
        )
    return exit_code(outcome)


def print_notes(console: Any, result: Any) -> None:
    """Print the result's notes (gold ``side_effects`` not run...), one ``NOTE`` line each."""
    # rich loads only when a summary is printed, not for --version: start-up
    from rich.text import Text

    for note in getattr(result, "notes", ()):
        console.print(Text(f"NOTE {shown(note)}", style="yellow"))
        console.print()


def _print_summary(result: ReportResult, opts: EvalOptions) -> Any:
    # rich and the console report load only when a summary is printed: start-up
    from rich.text import Text

    from ..reports.console import EvalSummary, make_console

    console = make_console()
    console.print(EvalSummary(result, verbose=opts.verbose))
    print_notes(console, result)
    console.print(Text(f"> JSON report: {visible(opts.output)}"))
    if opts.html:
        console.print(Text(f"> HTML report: {visible(opts.html)}"))
    if opts.csv:
        console.print(Text(f"> CSV report: {visible(opts.csv)}"))
    if opts.markdown:
        console.print(Text(f"> Markdown report: {visible(opts.markdown)}"))
    console.print()
    console.file.flush()
    return console


def _interrupted() -> None:
    error_line("interrupted")
