"""Toolscore 1.10's ``toolscore.reports.console_report``: the console summary and messages.

The summary is :class:`~toolscore.reports.console.EvalSummary` (what ``toolscore eval``
prints); markup in tool names and messages is shown as text, never parsed.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from ..redact import redact_secrets
from . import ReportResult
from .console import EvalSummary, make_console

__all__ = ["print_error", "print_evaluation_summary", "print_progress", "print_validation_result"]


def print_evaluation_summary(
    result: ReportResult,
    console: Console | None = None,
    verbose: bool = False,
    show_explanations: bool = True,
) -> None:
    """Print the evaluation summary (``verbose``: the call counts and every core metric).

    ``show_explanations`` is accepted for Toolscore 1.10's signature; the summary always lists
    the top issues to fix.
    """
    del show_explanations
    (console or make_console()).print(EvalSummary(result, verbose=verbose))


def print_error(message: str, console: Console | None = None) -> None:
    """Print ``message`` (redacted) in a red ``ERROR`` panel."""
    text = Text("ERROR ", style="bold red") + Text(redact_secrets(message))
    (console or make_console()).print(Panel.fit(text, border_style="red"))


def print_progress(message: str, console: Console | None = None) -> None:
    """Print a ``> message`` progress line (redacted)."""
    (console or make_console()).print(Text(f"> {redact_secrets(message)}", style="dim"))


def print_validation_result(
    trace_file: str,
    call_count: int,
    first_call: Any | None = None,
    console: Console | None = None,
) -> None:
    """Print what ``validate`` found in a trace: the call count and the first call (redacted)."""
    out = console or make_console()
    out.print(Panel.fit(Text(f"OK Valid trace file: {trace_file}", style="green")))
    out.print(Text(f"Total calls: {call_count}"))
    if first_call is not None:
        out.print(Text(f"First tool: {redact_secrets(str(first_call.tool))}"))
        out.print(Text(f"First args: {redact_secrets(repr(first_call.args))}"))
