"""The ``toolscore`` command line (typer): ``eval`` here, more commands registered later.

The CLI is thin: it parses options, calls :func:`toolscore.api.evaluate_trace`, writes the
reports and prints the summary; exit statuses come from :func:`toolscore._exitcodes.exit_code`.
``import toolscore`` never imports this module (nor typer or rich).

Other commands live in their own modules and register themselves on :data:`app`: a module
named in :data:`EXTRA_COMMANDS` exposes ``register(app: typer.Typer) -> None``, which is
called before the command line is parsed. Such a module may reuse :func:`error_line`,
:func:`parse_weights` and :func:`toolscore.reports.console.make_console`.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

import typer
import typer.main

from ._cliutil import error_line, failure_status, os_error_text, parse_run_options, parse_weights
from ._exitcodes import EXIT_ERROR, Outcome, exit_code
from ._params import defer_coercion
from .dataset import cli as dataset_cli
from .limits import DEFAULT_MAX_VALUE_BYTES, ensure_recursion_limit, set_max_value_bytes
from .redact import use_pii
from .verdict import SCORE_EPSILON

if TYPE_CHECKING:
    from rich.progress import Task
    from rich.text import Text

    from ._ci_cli import CiOptions
    from .calls import ToolCall
    from .columns import Columns
    from .reports import ReportResult
    from .reports.json import JsonReport

__all__ = [
    "EXTRA_COMMANDS",
    "EvalOptions",
    "app",
    "closed_output_status",
    "error_line",
    "is_closed_output",
    "main",
    "parse_weights",
    "run_eval",
]

PROGRESS_MIN_BYTES = 20 * 1024 * 1024
PROGRESS_REFRESH = 10
"""Progress bar redraws per second at most."""
"""Trace size from which a progress bar is shown (when stderr is a terminal)."""

EXTRA_COMMANDS: tuple[str, ...] = ()
"""Modules that add commands: each exposes ``register(app)``."""

app = typer.Typer(
    name="toolscore",
    help="Evaluate LLM-agent tool calls against a gold file: score, grade, safety checks.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@dataclass
class EvalOptions:
    """The options of ``toolscore eval``, as parsed by typer."""

    gold: str
    trace: str
    format: str = "auto"
    weights: list[str] = field(default_factory=list)
    output: str = "toolscore.json"
    markdown: str | None = None
    html: str | None = None
    verbose: bool = False
    fail_under: str | None = None
    forbidden: str | None = None
    fail_on_violations: bool = False
    workers: int | None = None
    ci: CiOptions = field(default_factory=lambda: _ci_options())


def _ci_options() -> CiOptions:
    from ._ci_cli import CiOptions

    return CiOptions()


# -- progress ------------------------------------------------------------------------------


def _calls_column() -> Any:
    from rich.progress import ProgressColumn
    from rich.text import Text

    class CallsColumn(ProgressColumn):
        """Calls read so far and calls per second."""

        def render(self, task: Task) -> Text:
            calls = int(task.fields.get("calls", 0))
            elapsed = task.elapsed or 0.0
            rate = calls / elapsed if elapsed > 0 else 0.0
            return Text(f"{calls:,} calls ({rate:,.0f}/s)", style="cyan")

    return CallsColumn()


def _wants_progress(trace: str) -> bool:
    if trace == "-" or not sys.stderr.isatty():
        return False
    try:
        return os.path.getsize(trace) > PROGRESS_MIN_BYTES
    except OSError:
        return False


# -- eval ------------------------------------------------------------------------------------


def _gates(result: ReportResult, opts: EvalOptions, threshold: float | str | None) -> Outcome:
    from .verdict import judge, passes

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
    if threshold is not None and verdict.score is not None:
        score = verdict.score
        if isinstance(threshold, str):
            below = not passes(score, threshold)
            what = f"grade {verdict.grade} is below --fail-under {threshold}"
        else:
            below = not score >= threshold - SCORE_EPSILON
            what = f"score {score:.1%} is below --fail-under {opts.fail_under}"
        if below:
            sys.stderr.write(f"FAIL {what}\n")
    sys.stderr.flush()
    return Outcome(violations=violations, below_threshold=below)


def _evaluate(
    opts: EvalOptions,
    gold: list[ToolCall],
    weights: dict[str, float] | None,
    on_calls: JsonReport,
    on_finding: Callable[[list[Any]], None],
) -> ReportResult:
    from .api import evaluate_trace

    def run(spool: Any, on_bytes: Callable[[int], None] | None) -> ReportResult:
        result: ReportResult = evaluate_trace(
            gold,
            opts.trace,
            format=opts.format,
            weights=weights,
            forbidden=opts.forbidden,
            on_finding=on_finding,
            on_calls=spool,
            workers=opts.workers,
            on_bytes=on_bytes,
        )
        return result

    from ._interrupt import active

    stop = active()
    check = None if stop is None else stop.check_bytes  # a first Ctrl-C ends the read there
    if not _wants_progress(opts.trace):
        return run(on_calls, check)

    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    # No refresh thread: the bar is redrawn from the reads themselves, so that the process
    # has no other thread when it forks the processes that read parts of a large trace.
    progress = Progress(
        TextColumn("Reading"),
        BarColumn(),
        DownloadColumn(),
        _calls_column(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
        auto_refresh=False,
    )
    task = progress.add_task("trace", total=os.path.getsize(opts.trace), calls=0)
    shown = [0.0]

    def redraw() -> None:
        now = time.monotonic()
        if now - shown[0] >= 1 / PROGRESS_REFRESH:
            shown[0] = now
            progress.refresh()

    def advance(n: int) -> None:
        if check is not None:
            check(n)
        progress.advance(task, n)
        redraw()

    class Counting:
        """The spool, counting the calls for the progress bar on the way."""

        counted = 0

        def _count(self, n: int) -> None:
            self.counted += n
            progress.update(task, calls=self.counted)

        def __call__(self, calls: list[ToolCall]) -> None:
            on_calls(calls)
            self._count(len(calls))

        def take_columns(self, columns: Columns) -> None:
            on_calls.take_columns(columns)
            self._count(columns.n)

        def adopt(self, path: str, count: int) -> None:
            on_calls.adopt(path, count)
            self._count(count)

        @property
        def directory(self) -> str | None:
            return on_calls.directory

    with progress:
        return run(Counting(), advance)


def run_eval(opts: EvalOptions) -> int:
    """Run ``toolscore eval``: evaluate, write the reports, print the summary, apply gates.

    Returns:
        The exit status (see :func:`toolscore._exitcodes.exit_code`).
    """
    from .errors import ToolscoreError
    from .gold import load_gold
    from .outputs import refuse_overlap
    from .reports.json import FindingSpool, JsonReport

    parsed = parse_run_options(opts.weights, opts.fail_under)
    if isinstance(parsed, int):
        return parsed
    weights, threshold = parsed

    from ._ci_cli import prepare

    try:
        refuse_overlap(*eval_paths(opts))
    except ToolscoreError as exc:
        return failure_status(exc)
    try:
        ci = prepare(opts.ci)
        gold = load_gold(opts.gold)
    except (ToolscoreError, ValueError, OSError) as exc:
        return failure_status(exc)
    try:
        # written as the trace is read, next to its place (a part read by another process
        # is spooled there too: copy_file_range takes it in the kernel, within one mount)
        report = JsonReport(opts.output, gold)
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
        if opts.html:
            from .reports.html import write_html

            write_html(result, opts.html)
        if opts.markdown:
            from .reports.markdown import write_markdown

            write_markdown(result, opts.markdown)
    except OSError as exc:
        error_line(f"cannot write a report: {os_error_text(exc)}")
        return EXIT_ERROR

    console = _print_summary(result, opts)
    regression = False
    if opts.ci.any:
        from ._ci_cli import finish

        try:
            regression = finish(
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
    from ._ci_cli import ci_paths

    ci_inputs, ci_outputs = ci_paths(opts.ci)
    inputs += ci_inputs
    outputs += ci_outputs
    return inputs, outputs


def final_status(
    result: ReportResult,
    opts: EvalOptions,
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
    from rich.text import Text

    from .sanitize import shown

    for note in getattr(result, "notes", ()):
        console.print(Text(f"NOTE {shown(note)}", style="yellow"))
        console.print()


def _print_summary(result: ReportResult, opts: EvalOptions) -> Any:
    from rich.text import Text

    from .reports.console import EvalSummary, make_console
    from .sanitize import visible

    console = make_console()
    console.print(EvalSummary(result, verbose=opts.verbose))
    print_notes(console, result)
    console.print(Text(f"> JSON report: {visible(opts.output)}"))
    if opts.html:
        console.print(Text(f"> HTML report: {visible(opts.html)}"))
    if opts.markdown:
        console.print(Text(f"> Markdown report: {visible(opts.markdown)}"))
    console.print()
    console.file.flush()
    return console


# -- commands --------------------------------------------------------------------------------


def _version(value: bool) -> None:
    if value:
        import toolscore

        typer.echo(f"toolscore, version {getattr(toolscore, '__version__', '0.0.0')}")
        raise typer.Exit(0)


# Options that `eval` and `watch` share, declared once.
FormatOption = Annotated[
    str, typer.Option("--format", "-f", help="Trace format, or auto to detect it.")
]
WeightOption = Annotated[
    list[str] | None,
    typer.Option("--weight", help="Score weight NAME=VALUE (repeatable).", show_default=False),
]
FailUnderOption = Annotated[
    str | None,
    typer.Option("--fail-under", help="Exit 1 when the score (0-1) or grade (A-F) is below this."),
]
ForbiddenOption = Annotated[
    str | None,
    typer.Option(
        "--forbidden",
        help="A JSON rule file: forbidden-call rules, or an object with hard rules too.",
    ),
]
PiiOption = Annotated[
    bool,
    typer.Option(
        "--pii",
        help="Also look for personal data (email, phone, card numbers, US SSN, IBAN): "
        "findings, --fail-on-violations, and redacted from every report.",
    ),
]
FailOnViolationsOption = Annotated[
    bool,
    typer.Option(
        "--fail-on-violations", help="Exit 1 when a forbidden call or a credential is found."
    ),
]


# CI outputs (issue 13): baselines, JUnit XML, SARIF (see toolscore._ci_cli).
SaveBaselineOption = Annotated[
    str | None,
    typer.Option("--save-baseline", help="Write a baseline of this run (score, findings)."),
]
BaselineOption = Annotated[
    str | None,
    typer.Option("--baseline", help="Exit 1 when this run regressed against this baseline."),
]
BaselineToleranceOption = Annotated[
    float,
    typer.Option(
        "--baseline-tolerance", help="Score drop (0-1, absolute) allowed against --baseline."
    ),
]
JunitOption = Annotated[
    str | None, typer.Option("--junit", help="Also write JUnit XML (one test case per trace).")
]
SarifOption = Annotated[
    str | None, typer.Option("--sarif", help="Also write the findings as SARIF 2.1.0.")
]


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """Evaluate LLM-agent tool calls against a gold file: score, grade, safety checks."""


@app.command("eval")
def eval_command(
    gold_file: Annotated[str, typer.Argument(help="The gold (expected calls) JSON file.")],
    trace_file: Annotated[
        str, typer.Argument(help="The trace: a file, a .gz file, or - for stdin.")
    ],
    format: FormatOption = "auto",
    weight: WeightOption = None,
    output: Annotated[
        str, typer.Option("--output", "-o", help="The JSON report (always written).")
    ] = "toolscore.json",
    markdown: Annotated[
        str | None, typer.Option("--markdown", help="Also write a Markdown report.")
    ] = None,
    html: Annotated[str | None, typer.Option("--html", help="Also write an HTML report.")] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Show the detailed metrics.")
    ] = False,
    fail_under: FailUnderOption = None,
    forbidden: ForbiddenOption = None,
    fail_on_violations: FailOnViolationsOption = False,
    pii: PiiOption = False,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            min=0,
            help="Processes to read a large JSON Lines trace with (0: one per CPU).",
        ),
    ] = 0,
    save_baseline: SaveBaselineOption = None,
    baseline: BaselineOption = None,
    baseline_tolerance: BaselineToleranceOption = 0.0,
    junit: JunitOption = None,
    sarif: SarifOption = None,
    max_value_bytes: Annotated[
        int,
        typer.Option(
            "--max-value-bytes",
            min=1,
            help="The largest JSON line, array item or string read whole (default 64 MiB).",
        ),
    ] = DEFAULT_MAX_VALUE_BYTES,
    # datasets (toolscore.dataset): many traces, each against its own gold
    trace_key: dataset_cli.TraceKeyOption = None,
    task_key: dataset_cli.TaskKeyOption = None,
    task_regex: dataset_cli.TaskRegexOption = None,
    per_trace: dataset_cli.PerTraceOption = None,
    min_pass_rate: dataset_cli.MinPassRateOption = None,
    pass_score: dataset_cli.PassScoreOption = "A",
    pass_all_calls: dataset_cli.PassAllCallsOption = True,
    pass_no_violations: dataset_cli.PassNoViolationsOption = True,
    engine: dataset_cli.EngineOption = None,
    scheduler: dataset_cli.SchedulerOption = None,
    shared_dir: dataset_cli.SharedDirOption = None,
    interleaved: dataset_cli.InterleavedOption = False,
) -> None:
    """Score a trace against a gold file and report behavior and safety findings.

    TRACES may also be a dataset (a directory, a glob, a URL, or a file of many traces with
    --trace-key): each trace is then scored against its own gold (one gold file for all, a
    JSON Lines gold keyed by trace id, or a directory of gold files)."""
    set_max_value_bytes(max_value_bytes)
    use_pii(pii)
    opts = EvalOptions(
        gold=gold_file,
        trace=trace_file,
        format=format,
        weights=list(weight or ()),
        output=output,
        markdown=markdown,
        html=html,
        verbose=verbose,
        fail_under=fail_under,
        forbidden=forbidden,
        fail_on_violations=fail_on_violations,
        workers=workers or None,
    )
    opts.ci.save_baseline = save_baseline
    opts.ci.baseline = baseline
    opts.ci.baseline_tolerance = baseline_tolerance
    opts.ci.junit = junit
    opts.ci.sarif = sarif
    dataset = dataset_cli.DatasetOptions(
        trace_key=trace_key,
        task_key=task_key,
        task_regex=task_regex,
        per_trace=per_trace,
        min_pass_rate=min_pass_rate,
        pass_score=pass_score,
        pass_all_calls=pass_all_calls,
        pass_no_violations=pass_no_violations,
        engine=engine,
        scheduler=scheduler,
        shared_dir=shared_dir,
        interleaved=interleaved,
    )
    from ._interrupt import StopOnSignal, Terminated

    stop = StopOnSignal(escalate_after=1.0)
    try:
        if dataset_cli.wants_dataset(gold_file, trace_file, dataset):
            code = dataset_cli.run_dataset(opts, dataset)
        else:
            with stop:
                code = stop.exit_status(run_eval(opts))
    except (KeyboardInterrupt, Terminated):  # a second signal: stopped at once, cleaned up
        error_line("interrupted")
        code = stop.exit_status(EXIT_ERROR)
    except Exception as exc:
        if is_closed_output(exc):
            raise typer.Exit(closed_output_status()) from None
        if verbose:
            raise
        error_line(f"internal error: {type(exc).__name__}: {exc} (run with -v for details)")
        code = exit_code(Outcome(internal_error=True))
    raise typer.Exit(code)


def is_closed_output(exc: BaseException) -> bool:
    """Whether ``exc`` is stdout's reader going away (``BrokenPipeError``, alone or in an
    exception group)."""
    if isinstance(exc, BrokenPipeError):
        return True
    inner = getattr(exc, "exceptions", None)  # an exception group (3.11+, or anyio's backport)
    if isinstance(inner, tuple) and inner:
        return all(is_closed_output(e) for e in inner)
    return False


def closed_output_status() -> int:
    """stdout's reader is gone: send what is still buffered for it nowhere (so the exit does
    not fail again flushing it) and return :data:`~toolscore._exitcodes.EXIT_CLOSED_OUTPUT`."""
    from ._exitcodes import EXIT_CLOSED_OUTPUT

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    return EXIT_CLOSED_OUTPUT


def _register_extra_commands() -> None:
    for module in EXTRA_COMMANDS:
        importlib.import_module(module).register(app)


def _command() -> Any:
    """The whole command line as a click-style command (typer's), extra commands registered."""
    global _COMMAND
    if _COMMAND is None:
        _register_extra_commands()
        command = typer.main.get_command(app)
        defer_coercion(command)  # pydantic only for a value that needs it
        _COMMAND = command
    return _COMMAND


_COMMAND: Any = None


class _Main:
    """``toolscore.cli.main``: the console-script entry point, and a command that click's
    ``CliRunner`` drives as it drove Toolscore's ``main`` group:
    ``CliRunner().invoke(main, ["eval", "gold.json", "trace.json"])``.

    Typer (0.29 on) carries its own copy of click, so this is not a ``click.Command``; it has
    what ``CliRunner.invoke`` uses: ``name`` and ``main(args, prog_name, standalone_mode,
    ...)``, which runs the typer application.
    """

    name = "toolscore"

    def main(self, args: Any = None, prog_name: str | None = None, **extra: Any) -> Any:
        """Run the command line on ``args`` (``sys.argv[1:]`` when None), as click's
        ``Command.main`` does (``standalone_mode`` and the other keywords are passed on)."""
        return _command().main(args=args, prog_name=prog_name or "toolscore", **extra)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        _command()
        ensure_recursion_limit()
        # A run allocates millions of short-lived objects that reference counting frees; the
        # cyclic collector need not rescan the modules loaded so far each time it runs.
        gc.freeze()
        gc.set_threshold(50_000, 20, 50)
        return self.main(*args, **kwargs)

    def __repr__(self) -> str:
        return "<toolscore command line>"


main = _Main()
"""The console-script entry point (``toolscore``), also a command for click's ``CliRunner``."""


EXTRA_COMMANDS += ("toolscore._watch_cli",)  # toolscore watch (issue 4)
EXTRA_COMMANDS += ("toolscore.serve.command",)  # toolscore serve (issue 33)
