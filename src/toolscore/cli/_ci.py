"""``toolscore eval``'s CI outputs: ``--save-baseline``, ``--baseline``, ``--junit``, ``--sarif``.

Kept out of :mod:`toolscore.cli.eval` so the command stays thin: :func:`prepare` reads the
baseline before anything is evaluated (a bad baseline is a usage error, exit 2, with nothing
run), and :func:`finish` compares, saves and writes the files once the result exists. The
writers themselves (:mod:`toolscore.baseline`, :mod:`toolscore.reports.junit`,
:mod:`toolscore.reports.sarif`) take ``(trace_id, trace_path, result)`` entries, so a run
over many traces uses them the same way.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..sanitize import shown
from ..verdict import judge, passes
from ._options import CiOptions

if TYPE_CHECKING:
    from ..baseline import Baseline, Comparison
    from ..reports.junit import Gate

__all__ = [
    "CiState",
    "append_verdict",
    "baseline_gate",
    "ci_paths",
    "finish",
    "gates_of",
    "markdown_text",
    "prepare",
    "say_verdict",
    "verdict_markdown",
]


def ci_paths(
    options: CiOptions,
) -> tuple[list[tuple[str, str | None]], list[tuple[str, str | None]]]:
    """The CI options' inputs and outputs, for :func:`toolscore.outputs.refuse_overlap`:
    ``--baseline b.json --save-baseline b.json`` updates the baseline (read before the run),
    so the baseline is an input only when it is not also the one saved."""
    inputs: list[tuple[str, str | None]] = []
    if options.save_baseline is None or os.path.realpath(options.save_baseline) != os.path.realpath(
        options.baseline or ""
    ):
        inputs.append(("the baseline", options.baseline))
    outputs = [
        ("--junit", options.junit),
        ("--sarif", options.sarif),
        ("--save-baseline", options.save_baseline),
    ]
    return inputs, outputs


@dataclass
class CiState:
    """What :func:`prepare` read: the baseline to compare with, if any."""

    options: CiOptions
    baseline: Baseline | None = None


def prepare(options: CiOptions) -> CiState:
    """Check the options and read the baseline.

    Raises:
        UsageError: a bad ``--baseline-tolerance``.
        InputError: the baseline cannot be read or is not a toolscore baseline.
    """
    tolerance = options.baseline_tolerance
    if not math.isfinite(tolerance) or tolerance < 0:
        raise UsageError(f"--baseline-tolerance must be a number >= 0, got {tolerance}")
    state = CiState(options)
    if options.baseline:
        # baselines load only when one is asked for: start-up
        from ..baseline import load_baseline

        state.baseline = load_baseline(options.baseline)
    return state


def gates_of(
    result: Any,
    *,
    fail_under: str | None,
    threshold: float | str | None,
    fail_on_violations: bool,
    comparison: Comparison | None = None,
) -> list[Gate]:
    """The gates asked for on the command line, passed or failed, as JUnit test cases."""
    # the JUnit writer loads only when JUnit XML is asked for: start-up
    from ..reports.junit import Gate

    gates: list[Gate] = []
    if threshold is not None:
        ok = passes(result.score, threshold)
        what = (
            f"grade {result.grade} is below --fail-under {fail_under}"
            if isinstance(threshold, str)
            else f"score {result.score:.1%} is below --fail-under {fail_under}"
        )
        gates.append(Gate(f"fail-under {fail_under}", ok, "" if ok else what))
    if fail_on_violations:
        found = judge(result).violations
        ok = found.total == 0
        gates.append(
            Gate(
                "fail-on-violations",
                ok,
                "" if ok else f"{found.total} violation(s) found ({found.describe()})",
            )
        )
    if comparison is not None:
        gates.append(baseline_gate(comparison))
    return gates


def baseline_gate(comparison: Comparison) -> Gate:
    """The baseline's verdict as a gate: its first line the failure, all lines the detail."""
    # the JUnit writer loads only when a baseline is asked for: start-up
    from ..reports.junit import Gate

    lines = comparison.lines()
    return Gate(
        "baseline", comparison.passed, "" if comparison.passed else lines[0], "\n".join(lines)
    )


def say_verdict(console: Any, comparison: Comparison, markdown: str | None = None) -> None:
    """Print the baseline's verdict line by line (a FAIL in red, redacted) on ``console``
    (stdout when ``None``), and append it to the Markdown report ``markdown`` if given."""
    for line in comparison.lines():
        _say(console, shown(line), "red" if line.startswith("FAIL") else None)
    if markdown:
        append_verdict(markdown, comparison)


def finish(
    state: CiState,
    result: Any,
    *,
    trace_id: str,
    trace_path: str | None,
    fail_under: str | None,
    threshold: float | str | None,
    fail_on_violations: bool,
    console: Any = None,
    markdown: str | None = None,
) -> bool:
    """Compare with the baseline, save the new one, write JUnit and SARIF; with
    ``markdown`` (the run's Markdown report, a regular file), the baseline's verdict is
    appended to it (what the GitHub Action's job summary shows).

    Returns:
        True when the baseline comparison found a regression (the run then exits 1).

    Raises:
        OSError: a file cannot be written.
    """
    # baselines load only when CI outputs are asked for: start-up
    from ..baseline import compare, summarize, write_baseline

    options = state.options
    summary = summarize(result)
    comparison = None
    if state.baseline is not None:
        comparison = compare(state.baseline, {trace_id: summary}, options.baseline_tolerance)
        say_verdict(console, comparison, markdown)
    if options.save_baseline:
        write_baseline(options.save_baseline, {trace_id: summary})
        _say(console, f"> Baseline: {shown(options.save_baseline)}", None)
    entries = [(trace_id, trace_path, result)]
    if options.junit:
        # the JUnit writer loads only when JUnit XML is asked for: start-up
        from ..reports.junit import write_junit

        gates = gates_of(
            result,
            fail_under=fail_under,
            threshold=threshold,
            fail_on_violations=fail_on_violations,
            comparison=comparison,
        )
        write_junit(options.junit, entries, gates)
        _say(console, f"> JUnit XML: {shown(options.junit)}", None)
    if options.sarif:
        # the SARIF writer loads only when SARIF is asked for: start-up
        from ..reports.sarif import write_sarif

        write_sarif(options.sarif, entries)
        _say(console, f"> SARIF: {shown(options.sarif)}", None)
    return comparison is not None and not comparison.passed


def markdown_text(text: object) -> str:
    """``text`` for a Markdown line or table cell: redacted, sanitized, escaped (no HTML,
    link or image made of it: :func:`toolscore.reports.markdown.md_text`)."""
    # the Markdown report's module loads only when Markdown is written: start-up
    from ..reports.markdown import md_text

    return md_text(str(text))


def verdict_markdown(comparison: Comparison, limit: int = 20) -> str:
    """The baseline's verdict as a Markdown section: the verdict in bold, then the first
    ``limit`` regressions (redacted, sanitized, Markdown-escaped)."""
    md = markdown_text
    head, *rest = comparison.lines()
    regressions = [line.strip() for line in rest if "REGRESSION" in line]
    lines = ["## Baseline", "", f"**{md(head)}**", ""]
    lines += [f"- {md(line)}" for line in regressions[:limit]]
    if len(regressions) > limit:
        lines.append(f"- ... and {len(regressions) - limit} more (see the log)")
    return "\n".join(lines) + "\n"


def append_verdict(path: str, comparison: Comparison) -> None:
    """Append :func:`verdict_markdown` to the Markdown report at ``path`` when it is a
    regular file (a device or FIFO has had its report already)."""
    if not os.path.isfile(path):
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write("\n" + verdict_markdown(comparison))


def _say(console: Any, line: str, style: str | None) -> None:
    if console is None:
        sys.stdout.write(line + "\n")
        return
    # rich loads only when a summary is printed: start-up
    from rich.text import Text

    console.print(Text(line, style=style or ""))
