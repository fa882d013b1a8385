"""``toolscore regression BASELINE TRACE -g GOLD``: Toolscore 1.10's regression check, over the
baselines of :mod:`toolscore.baseline`.

The command is thin: it reads the baseline (``toolscore eval --save-baseline``), evaluates the
trace with :func:`toolscore.api.evaluate_trace`, summarizes it and compares the two with
:func:`toolscore.baseline.compare`. Exit 0: no regression; 1: a regression; 2: a usage or
input error (a bad baseline, gold or trace, or a trace not read to its end).

Unlike 1.10, a regression is the one :mod:`toolscore.baseline` defines (the composite score
dropped by more than ``--threshold``, fewer required calls completed, a new or more frequent
finding), not a drop in any of eight metrics; the threshold is an absolute amount of score
(0.05 is five points), which is what 1.10 did too, though its help said "5%".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from .._exitcodes import EXIT_ERROR, Outcome, exit_code
from ..errors import ToolscoreError
from ..sanitize import shown
from ..verdict import judge
from . import _options as opt
from ._options import CiOptions, RunOptions
from ._util import apply_settings, error_line, failure_status, os_error_text

if TYPE_CHECKING:
    from ..baseline import Comparison

__all__ = ["comparison_json", "regression_command", "run_regression"]

DEFAULT_THRESHOLD = 0.05
"""Toolscore 1.10's default: five points of score."""

BaselineArgument = Annotated[
    str, typer.Argument(help="A baseline written by toolscore eval --save-baseline FILE.")
]
GoldFileOption = Annotated[
    str, typer.Option("--gold-file", "-g", help="The gold (expected calls) JSON file.")
]
ThresholdOption = Annotated[
    float,
    typer.Option(
        "--threshold",
        "-t",
        help="Score drop allowed, absolute on the 0-1 score (0.05: five points).",
    ),
]
TraceArgument = Annotated[
    str, typer.Argument(help="The trace: a file, a .gz file, or - for stdin.", show_default=False)
]
ComparisonOutputOption = Annotated[
    str | None, typer.Option("--output", "-o", help="Also write the comparison as JSON.")
]


def regression_command(
    baseline_file: BaselineArgument,
    trace_file: TraceArgument,
    gold_file: GoldFileOption,
    threshold: ThresholdOption = DEFAULT_THRESHOLD,
    format: opt.FormatOption = "auto",
    forbidden: opt.ForbiddenOption = None,
    output: ComparisonOutputOption = None,
    verbose: opt.VerboseOption = False,
) -> None:
    """Evaluate a trace and compare it with a baseline: exit 1 on a regression.

    A regression: the score dropped by more than --threshold, fewer required calls were
    completed, or a finding (forbidden call, credential, failed call...) is new or more
    frequent. Give the rule file (--forbidden) the baseline was saved with."""
    code = run_regression(
        baseline_file,
        trace_file,
        gold_file,
        RunOptions(format=format, forbidden=forbidden),
        threshold=threshold,
        output=output,
        verbose=verbose,
    )
    raise typer.Exit(code)


def run_regression(
    baseline_file: str,
    trace_file: str,
    gold_file: str,
    run: RunOptions,
    *,
    threshold: float,
    output: str | None,
    verbose: bool,
) -> int:
    """Run ``toolscore regression``; returns the exit status."""
    # the evaluation, baselines and rich load only when the command runs: start-up
    from ..api import evaluate_trace
    from ..baseline import compare, summarize
    from ..outputs import refuse_overlap, write_report
    from ..reports.console import EvalSummary, make_console
    from ..reports.json import dumps
    from ._ci import prepare, say_verdict
    from .eval import final_status

    apply_settings(run)
    try:
        inputs = [("the baseline", baseline_file), ("the gold", gold_file)]
        inputs.append(("the trace", trace_file))
        refuse_overlap(inputs, [("-o", output)])
        state = prepare(CiOptions(baseline=baseline_file, baseline_tolerance=threshold))
        # as 1.10's regression: no side-effect validators (they touch the world, not the trace)
        result = evaluate_trace(
            gold_file, trace_file, run.format, validate_side_effects=False, forbidden=run.forbidden
        )
    except (ToolscoreError, ValueError, OSError) as exc:
        return failure_status(exc)
    assert state.baseline is not None  # prepare read it
    comparison = compare(state.baseline, {trace_file: summarize(result)}, threshold)
    console = make_console()
    if verbose:
        console.print(EvalSummary(result, verbose=True))
    say_verdict(console, comparison)
    console.file.flush()
    if output:
        try:
            write_report(output, dumps(comparison_json(comparison, result), indent=True) + b"\n")
        except OSError as exc:
            error_line(f"cannot write the comparison: {os_error_text(exc)}")
            return EXIT_ERROR
    code = final_status(result, run, None)  # a trace not read to its end outranks the verdict
    if code == 0 and not comparison.passed:
        code = exit_code(Outcome(regression=True))
    return code


def comparison_json(comparison: Comparison, result: Any) -> dict[str, Any]:
    """The ``-o`` file: the verdict, each regression, improvement and note (redacted: a
    finding key names tools, a note trace paths), and this run's verdict."""
    return {
        "passed": comparison.passed,
        "threshold": comparison.tolerance,
        "verdict": judge(result).to_json(),
        "regression_count": comparison.regression_count or len(comparison.regressions),
        "regressions": [
            {
                "trace_id": shown(r.trace_id) if r.trace_id is not None else None,
                "kind": r.kind,
                "message": shown(r.message),
                "key": shown(r.key) if r.key is not None else None,
            }
            for r in comparison.regressions
        ],
        "improvement_count": comparison.improvement_count or len(comparison.improvements),
        "improvements": [shown(line) for line in comparison.improvements],
        "notes": [shown(line) for line in comparison.notes],
    }
