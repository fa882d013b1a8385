"""The console summary of an evaluation, as rich renderables.

:class:`EvalSummary` yields the whole summary (header, score table, grade, required calls,
top issues, behavior and safety findings, incomplete-input note); the CLI prints it with
:func:`make_console`. Every piece of data (tool names, messages, paths) goes in as
``Text(...)``, never as markup, so a tool named ``x[/bar]`` prints as itself, and everything
shown is redacted.

Example::

    from rich.console import Console
    Console().print(EvalSummary(result))
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from typing import IO

from rich.console import Console, ConsoleOptions, RenderResult
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..sanitize import shown
from ..verdict import judge
from . import ReportResult, input_lines, number, required_counts, section
from ._issues import top_issues
from ._pairing import pairing_note

__all__ = ["MAX_FINDING_LINES", "MAX_ISSUES", "EvalSummary", "make_console", "score_style"]

MAX_FINDING_LINES = 50
"""Behavior and safety lines shown at most; the JSON report holds every finding."""
MAX_ISSUES = 8
"""Top issues shown at most."""

_SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}
_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


class _Console(Console):
    """A console whose closed output (``| head -1``) raises :class:`BrokenPipeError` for the
    command to map to its exit status, instead of rich's ``SystemExit(1)`` (1 means a failed
    gate here)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


def make_console(file: IO[str] | None = None, *, stderr: bool = False) -> Console:
    """A console for the CLI: styled on a terminal, plain and unwrapped otherwise.

    When the stream is not a terminal, rich would wrap at 80 columns; the console is then
    built with ``soft_wrap=True`` so that every line comes out whole (a log or a CI job shows
    each finding on one line), with no color or control codes.

    Args:
        file: the stream (default stdout, or stderr with ``stderr=True``).
        stderr: write to stderr.
    """
    console = _Console(file=file, stderr=stderr, highlight=False)
    if console.is_terminal:
        return console
    return _Console(
        file=file if file is not None else (sys.stderr if stderr else sys.stdout),
        highlight=False,
        soft_wrap=True,
        color_system=None,
        emoji=False,
    )


def score_style(value: float) -> str:
    """Green at 90% and above, yellow at 70%, red below."""
    if value >= 0.9:
        return "green"
    if value >= 0.7:
        return "yellow"
    return "red"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


class EvalSummary:
    """The eval summary: what ``toolscore eval`` prints to stdout.

    Args:
        result: the evaluation result.
        verbose: add the call counts and the Core Metrics table.
        max_findings: behavior and safety lines shown before "... and N more".
    """

    def __init__(
        self,
        result: ReportResult,
        *,
        verbose: bool = False,
        max_findings: int = MAX_FINDING_LINES,
    ) -> None:
        self.result = result
        self.verbose = verbose
        self.max_findings = max_findings

    def __repr__(self) -> str:
        return f"EvalSummary(score={self.result.score!r}, verbose={self.verbose!r})"

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        result = self.result
        yield Text()
        yield Panel.fit(Text("Toolscore Evaluation Results", style="bold cyan"))
        yield Text()
        if not getattr(result, "has_gold", True):
            yield from self._checks_only()
            return
        if self.verbose:
            yield Text(f"Expected calls: {len(result.gold_calls)}")
            yield Text(f"Actual calls: {result.trace_calls_count}")
            yield Text()
            yield self._core_metrics()
        else:
            yield self._score_table()
        yield Text()
        yield self._grade_panel()
        yield Text()
        yield from self._required()
        yield from self._issues()
        yield from self._behavior()
        yield from self._input()
        yield from self._incomplete()
        yield from self._pairing()
        if not self.verbose:
            yield Text("Use --verbose for detailed metrics and failure analysis.", style="dim")
            yield Text()

    # -- pieces ---------------------------------------------------------------------------

    def _score_table(self) -> Table:
        result = self.result
        table = Table(show_header=True, header_style="bold")
        table.add_column("Metric")
        table.add_column("Score", justify="right")
        rows = (
            ("Overall Score", result.score),
            ("Selection Accuracy", result.selection_accuracy),
            ("Argument F1", result.argument_f1),
            ("Sequence Accuracy", result.sequence_accuracy),
        )
        for name, value in rows:
            table.add_row(Text(name), Text(f"{value:.1%}", style=score_style(value)))
        return table

    def _core_metrics(self) -> Table:
        result = self.result
        metrics = result.metrics
        correctness = section(metrics, "tool_correctness_metrics")
        sequence = section(metrics, "sequence_metrics")
        arguments = section(metrics, "argument_metrics")
        efficiency = section(metrics, "efficiency_metrics")
        invocation = number(metrics.get("invocation_accuracy"))
        redundant = number(efficiency.get("redundant_rate"))
        table = Table(title="Core Metrics", show_header=True, header_style="bold")
        table.add_column("Metric")
        table.add_column("Score", justify="right")
        table.add_column("Details")
        calls = int(number(efficiency.get("total_calls")))
        rows: tuple[tuple[str, float, str, str], ...] = (
            ("Overall Score", result.score, "weighted", score_style(result.score)),
            (
                "Invocation Accuracy",
                invocation,
                "Did the agent invoke the expected tools?",
                score_style(invocation),
            ),
            (
                "Selection Accuracy",
                result.selection_accuracy,
                "Share of calls to an expected tool",
                score_style(result.selection_accuracy),
            ),
            (
                "Tool Correctness",
                number(correctness.get("tool_correctness")),
                f"{int(number(correctness.get('correct_count')))} of "
                f"{int(number(correctness.get('total_expected')))} expected tools called",
                score_style(number(correctness.get("tool_correctness"))),
            ),
            (
                "Sequence Accuracy",
                result.sequence_accuracy,
                f"Edit distance: {number(sequence.get('edit_distance'))}",
                score_style(result.sequence_accuracy),
            ),
            (
                "Argument F1",
                result.argument_f1,
                f"Precision: {number(arguments.get('precision')):.1%}, "
                f"Recall: {number(arguments.get('recall')):.1%}",
                score_style(result.argument_f1),
            ),
            (
                "Redundant Call Rate",
                redundant,
                f"Unnecessary calls ({int(number(efficiency.get('redundant_count')))}/{calls})",
                "green" if redundant < 0.1 else "yellow" if redundant < 0.3 else "red",
            ),
        )
        for name, value, details, style in rows:
            table.add_row(Text(name), Text(f"{value:.1%}", style=style), Text(details))
        recall = result.required_call_recall
        if recall is not None:
            table.add_row(
                Text("Required Call Recall"),
                Text(_pct(recall), style=score_style(recall)),
                Text("Required calls made without failing"),
            )
        return table

    def _checks_only(self) -> Iterator[Text | Panel]:
        """No gold: the checks' findings, with no score, grade or advice about the calls."""
        count = self.result.trace_calls_count
        verdict = judge(self.result)
        style = "bold red" if verdict.violations.total else "bold green"
        yield Panel.fit(
            Text(
                f"No gold: checks only   {count} call(s)   "
                f"violations: {verdict.violations.describe()}",
                style=style,
            )
        )
        yield Text()
        yield from self._behavior()
        yield from self._input()
        yield from self._incomplete()

    def _grade_panel(self) -> Panel:
        verdict = judge(self.result)
        score = verdict.score if verdict.score is not None else self.result.score
        word = "PASS" if verdict.passed else "FAIL"
        text = Text(
            f"Grade {verdict.grade}   {word} ({score:.1%})",
            style=f"bold {score_style(score)}",
        )
        reasons = verdict.criterion.reasons(verdict)
        if reasons:
            text.append(f"\n{'; '.join(reasons)}", style="dim")
        return Panel.fit(text)

    def _required(self) -> Iterator[Text]:
        counts = required_counts(self.result)
        recall = self.result.required_call_recall
        if counts is None or recall is None or not recall < 1.0:
            return
        done, total = counts
        yield Text(
            f"Required calls completed: {done} of {total} "
            "(missing or failed; not part of the default score)",
            style="yellow",
        )
        yield Text()

    def _issues(self) -> Iterator[Text]:
        issues, total = top_issues(self.result.metrics, MAX_ISSUES)
        if not issues:
            if self.result.input_error is None:
                yield Text(
                    "No tool-calling issues - the actual calls match the expected spec.",
                    style="green",
                )
                yield Text()
            return
        yield Text("Top issues to fix", style="bold")
        for number_, issue in enumerate(issues, 1):
            line = Text(f"  {number_}. ")
            line.append(shown(issue.tool), style="bold")
            line.append(f"  {shown(issue.problem)}")
            yield line
            yield Text(f"     -> {shown(issue.fix)}", style="dim")
        if total > len(issues):
            yield Text(f"  ... and {total - len(issues)} more issue(s).", style="dim")
        yield Text()

    def _behavior(self) -> Iterator[Text]:
        findings = self.result.behavior_findings()
        ordered = sorted(findings, key=lambda f: _SEVERITY_RANK.get(f[0], 3))
        yield from self._findings("Behavior and safety", ordered)

    def _input(self) -> Iterator[Text]:
        lines, hidden = input_lines(self.result)
        yield from self._findings("Input", lines, hidden)

    def _findings(
        self, title: str, lines: list[tuple[str, str]], hidden: int = 0
    ) -> Iterator[Text]:
        """A titled list of ``(severity, message)`` lines, redacted, capped, with a count of
        the rest (``hidden`` more were counted but not kept)."""
        if not lines:
            return
        yield Text(title, style="bold")
        for severity, message in lines[: self.max_findings]:
            line = Text("  ")
            line.append(f"{severity.upper():<7}", style=_SEVERITY_STYLE.get(severity, ""))
            line.append(f"  {shown(message)}")
            yield line
        rest = max(len(lines) - self.max_findings, 0) + hidden
        if rest > 0:
            yield Text(f"  ... and {rest} more (see the JSON report)", style="dim")
        yield Text()

    def _pairing(self) -> Iterator[Text]:
        note = pairing_note(self.result.metrics)
        if note is not None:
            yield Text(f"Note: {shown(note)}", style="yellow")
            yield Text()

    def _incomplete(self) -> Iterator[Text]:
        error = self.result.input_error
        if error is None:
            return
        count = self.result.trace_calls_count
        noun = "call" if count == 1 else "calls"
        yield Text(
            f"Trace incomplete: {shown(str(error))} — evaluated the {count} {noun} read before it",
            style="bold red",
        )
        yield Text()
