"""``toolscore watch``: evaluate a trace live, printing each finding the moment it happens.

::

    tail -f trace.jsonl | toolscore watch --forbidden forbidden.json
    toolscore watch trace.jsonl --follow --gold gold.json --findings findings.jsonl

Each finding is printed on one line, redacted, prefixed by the number of calls read when it was
reported (and, with ``--gold``, the running score)::

    [calls 12] ERROR    call 12 run_shell matches forbidden rule 1: destructive
    [calls 12 | score 69.0%] WARNING  call 12 fetch failed: timeout

When stdout is a terminal, a status line below the findings shows the calls read, the
findings so far, the rate and the score; otherwise only the plain lines above are written,
each flushed at once, with no control codes. At end of input, on Ctrl-C (SIGINT) or on SIGTERM,
reading stops, the checks finish on every call read, and the ``eval`` summary is printed,
followed by ``> Calls read: N in T s (R/s)``; the exit status is then 130 (SIGINT) or 143
(SIGTERM), else ``eval``'s. A second signal exits at once, without the summary, whatever a
check is doing (see :mod:`toolscore._interrupt`).

``--findings FILE`` appends each finding as one JSON line (``Finding.to_json()`` after a
``time``: when it was written, ISO 8601 UTC), written with one unbuffered ``write`` per batch
of findings, so another process can tail it.
"""

from __future__ import annotations

import os
import time
from typing import IO, TYPE_CHECKING, Any

import typer

from .._interrupt import StopOnSignal, Terminated
from ..errors import ToolscoreError
from ..limits import DEFAULT_MAX_VALUE_BYTES
from ..sanitize import shown
from . import _options as opt
from ._options import WatchOptions, watch_options
from ._util import (
    apply_settings,
    error_line,
    failure_status,
    internal_error_status,
    parse_run_options,
    watch_source,
)
from .eval import final_status

if TYPE_CHECKING:
    from rich.console import Console

    from ..calls import Finding, ToolCall
    from ..columns import Columns
    from ..live import LiveRun
    from ..result import EvaluationResult

__all__ = ["SCORE_REFRESH", "STATUS_REFRESH", "WatchOptions", "format_finding", "watch_command"]

SCORE_REFRESH = 0.1
"""On a terminal, seconds between two running-score computations for the status line at least
(each costs a reduce over the gold file). Plain output recomputes the score for each batch
that has findings, so every finding line shows the score as of its own call."""
STATUS_REFRESH = 4
"""Status-line refreshes per second, on a terminal."""
INTERRUPTED = 130
"""Exit status after a second Ctrl-C, which skips the summary."""


def format_finding(finding: Finding, calls: int, score: float | None = None) -> str:
    """One finding's line: ``[calls N] SEVERITY  message`` (with ``| score S`` when given).

    The message is redacted again here, and its control characters and newlines shown escaped
    (:func:`toolscore.sanitize.shown`), so the line is safe whatever check emitted it.
    """
    prefix = f"[calls {calls}]" if score is None else f"[calls {calls} | score {score:.1%}]"
    message = shown(finding.message)
    return f"{prefix} {finding.severity.upper():<7}  {message}"


class _Status:
    """The terminal's status line; read by rich's refresh thread, so it only reads counters."""

    def __init__(self, printer: _Printer) -> None:
        self.printer = printer

    def __rich__(self) -> Any:
        # rich loads only when a command prints: start-up
        from rich.text import Text

        run = self.printer.run
        if run is None:
            return Text("waiting for input...", style="dim")
        counts = run.severity_counts
        text = Text(f"calls {run.calls_read:,}", style="bold cyan")
        text.append(f"  findings {run.findings_count:,}")
        if run.findings_count:
            text.append(" (")
            text.append(f"{counts.get('error', 0)} errors", style="red")
            text.append(", ")
            text.append(f"{counts.get('warning', 0)} warnings", style="yellow")
            text.append(")")
        text.append(f"  {run.rate:,.0f} calls/s", style="dim")
        score = self.printer.score
        if score is not None:
            text.append(f"  score {score:.1%}", style="bold")
        if run.stopped:
            text.append("  stopping...", style="dim")
        return text


class _Printer:
    """Writes findings as they come (plain lines or above a live status line), the findings
    file, and keeps the running score fresh."""

    def __init__(self, opts: WatchOptions, console: Console) -> None:
        self.opts = opts
        self.console = console
        self.live_status = console.is_terminal
        self.run: LiveRun | None = None
        self.score: float | None = None
        self._score_at = 0.0
        self._score_calls = -1
        self._out: IO[str] = console.file
        self._findings_fd: int | None = None
        self._live: Any = None

    def open(self) -> None:
        if self.opts.findings is not None:
            # the output helpers load only when a command runs: start-up
            from ..outputs import open_append

            self._findings_fd = open_append(self.opts.findings)
        if self.live_status:
            # rich.live loads only on a terminal: start-up
            from rich.live import Live

            self._live = Live(
                _Status(self),
                console=self.console,
                refresh_per_second=STATUS_REFRESH,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
        if self._findings_fd is not None:
            os.close(self._findings_fd)
            self._findings_fd = None

    def __call__(self, calls: list[ToolCall]) -> None:
        self.on_calls(calls)

    def refresh_score(self, force: bool = False) -> None:
        run = self.run
        if run is None or self.opts.gold is None:
            return
        now = time.monotonic()
        calls = run.calls_read
        if calls == self._score_calls or (not force and now - self._score_at < SCORE_REFRESH):
            return
        self._score_at = now
        self._score_calls = calls
        self.score = run.score()

    def on_calls(self, calls: list[ToolCall]) -> None:
        if self.live_status:
            self.refresh_score()

    def take_columns(self, columns: Columns) -> None:
        """The call sink for decoded blocks: the calls are not needed, only that they came
        (so a block is never turned into ``ToolCall`` objects for the watch)."""
        self.on_calls([])

    def on_finding(self, found: list[Finding]) -> None:
        if self._findings_fd is not None:
            # the output helpers load only when a command runs: start-up
            from ..reports.json import findings_lines

            os.write(self._findings_fd, findings_lines(found))
        run = self.run
        calls = run.calls_read if run is not None else 0
        self.refresh_score(force=not self.live_status)
        lines = [format_finding(f, calls, self.score) for f in found]
        if self.live_status:
            # rich loads only when a command prints: start-up
            from rich.text import Text

            for line, finding in zip(lines, found, strict=True):
                self.console.print(Text(line, style=_STYLE.get(finding.severity, "")))
        else:
            self._out.write("\n".join(lines) + "\n")
            self._out.flush()


_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


async def _watch(
    opts: WatchOptions, printer: _Printer, weights: Any, stop: StopOnSignal
) -> EvaluationResult:
    """Run the watch; a first SIGINT/SIGTERM (``stop``) stops reading and lets it finish."""
    # the event loop and the live evaluation load only when watch runs: start-up
    import asyncio

    import anyio.abc

    from ..live import plain_errors, watch

    loop = asyncio.get_running_loop()

    def request_stop() -> None:
        if printer.run is not None:
            printer.run.stop()

    # the handler runs between two bytecodes of whatever runs: hand the stop to the loop
    def on_first(signum: int) -> None:
        loop.call_soon_threadsafe(request_stop)

    stop.on_first = on_first
    result: EvaluationResult
    with plain_errors():
        source = watch_source(opts)
        try:
            async with watch(
                source,
                gold=opts.gold,
                forbidden=opts.forbidden,
                format=opts.format,
                weights=weights,
                on_finding=printer.on_finding,
                on_calls=printer,
            ) as run:
                printer.run = run
                if stop.requested:
                    run.stop()
                result = await run.wait()
        finally:
            if isinstance(source, anyio.abc.AsyncResource):
                with anyio.CancelScope(shield=True):
                    await source.aclose()
    return result


def _print_summary(result: EvaluationResult, console: Console, elapsed: float) -> None:
    """``eval``'s summary, then ``> Calls read: N in T s (R/s)`` (``eval``'s report lines'
    place)."""
    # rich and the console report load only when a summary is printed: start-up
    from rich.text import Text

    from ..reports.console import EvalSummary

    console.print(EvalSummary(result))
    n = result.trace_calls_count
    rate = f" ({n / elapsed:,.0f}/s)" if elapsed > 0 else ""
    console.print(Text(f"> Calls read: {n:,} in {elapsed:.1f} s{rate}"))
    console.print()
    console.file.flush()


def run_watch(opts: WatchOptions) -> int:
    """Run ``toolscore watch`` to the end of input (or a signal) and return the exit status."""
    # the event loop, the output helpers and the console load only when watch runs: start-up
    import anyio

    from ..outputs import refuse_overlap
    from ..reports.console import make_console

    parsed = parse_run_options(opts.weights, opts.fail_under)
    if isinstance(parsed, int):
        return parsed
    weights, threshold = parsed
    try:
        refuse_overlap(
            [
                ("the trace", opts.trace),
                ("the gold file", opts.gold),
                ("the rule file", opts.forbidden),
            ],
            [("--findings", opts.findings)],
        )
    except ToolscoreError as exc:
        return failure_status(exc)
    if opts.trace_key is not None:
        from .watch_sessions import run_watch_sessions  # only for a stream of sessions

        return run_watch_sessions(opts, weights, threshold)
    console = make_console()
    printer = _Printer(opts, console)
    started = time.monotonic()
    with StopOnSignal() as stop:
        try:
            printer.open()
            try:
                result = anyio.run(_watch, opts, printer, weights, stop)
            finally:
                printer.close()
        except (ToolscoreError, ValueError, OSError) as exc:
            if isinstance(exc, BrokenPipeError):
                raise  # stdout's reader is gone: watch_command maps it to its exit status
            return stop.exit_status(failure_status(exc))
        except (KeyboardInterrupt, Terminated):  # a second signal: no summary
            error_line("interrupted")
            return stop.exit_status(INTERRUPTED)
        _print_summary(result, console, time.monotonic() - started)
        return stop.exit_status(final_status(result, opts, threshold))


def watch_command(
    trace: opt.WatchTraceArgument = None,
    gold: opt.GoldOption = None,
    forbidden: opt.ForbiddenOption = None,
    follow: opt.FollowOption = False,
    format: opt.FormatOption = "auto",
    findings: opt.FindingsOption = None,
    fail_on_violations: opt.FailOnViolationsOption = False,
    fail_under: opt.FailUnderOption = None,
    weight: opt.WeightOption = None,
    pii: opt.PiiOption = False,
    max_value_bytes: opt.MaxValueBytesOption = DEFAULT_MAX_VALUE_BYTES,
    trace_key: opt.SessionKeyOption = None,
    idle: opt.IdleOption = 300.0,
    max_sessions: opt.MaxSessionsOption = 10_000,
) -> None:
    """Evaluate a trace live: print each finding as its call arrives, then the summary.

    With --trace-key, the stream holds many sessions, each evaluated on its own."""
    opts = watch_options(locals())
    opts.idle = opts.idle or None
    apply_settings(opts)
    try:
        code = run_watch(opts)
    except Exception as exc:
        code = internal_error_status(exc)
    raise typer.Exit(code)
