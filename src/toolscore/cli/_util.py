"""What the commands (``eval`` on one trace or a dataset, ``watch``) share: the one error line,
the options whose failure is an exit status rather than an exception, the settings every run
applies, and what an unexpected exception becomes."""

from __future__ import annotations

import os
import stat
import sys
from typing import Any

import typer

from .._exitcodes import EXIT_CLOSED_OUTPUT, Outcome, exit_code
from ..errors import InputError, UsageError
from ..limits import ReadLimits, set_max_value_bytes, set_read_limits
from ..redact import use_pii
from ..result import parse_weights
from ..sanitize import shown
from ..verdict import parse_fail_under
from ._options import RunOptions, WatchOptions

__all__ = [
    "apply_settings",
    "closed_output_status",
    "error_line",
    "failure_status",
    "internal_error_status",
    "is_closed_output",
    "os_error_text",
    "parse_run_options",
    "parse_weights",
]


def error_line(message: str) -> None:
    """Print ``toolscore: error: {message}`` (redacted, on one line) to stderr."""
    text = shown(message)
    sys.stderr.write(f"toolscore: error: {text}\n")
    sys.stderr.flush()


def parse_run_options(
    weight_items: list[str], fail_under: str | None
) -> tuple[dict[str, float] | None, float | str | None] | int:
    """Parse ``--weight`` and ``--fail-under``; an exit status (after the error line) if bad."""
    try:
        weights = parse_weights(weight_items)
        threshold = None if fail_under is None else parse_fail_under(fail_under)
    except ValueError as exc:
        error_line(str(exc))
        return exit_code(Outcome(usage_error=True))
    return weights, threshold


def failure_status(exc: BaseException) -> int:
    """Print the one error line for an error raised before a result exists; its exit status."""
    if isinstance(exc, OSError):
        error_line(os_error_text(exc))
        return exit_code(Outcome(input_error=True))
    error_line(str(exc))
    if isinstance(exc, InputError):
        return exit_code(Outcome(input_error=True))
    return exit_code(Outcome(usage_error=True))


def os_error_text(exc: OSError) -> str:
    """An OS error as one line naming the path: ``path: reason``."""
    if exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)


def apply_settings(opts: RunOptions) -> None:
    """The process-wide settings a run's options ask for (``--pii``, ``--max-value-bytes``,
    the read limits)."""
    set_max_value_bytes(opts.max_value_bytes)
    set_read_limits(
        ReadLimits(opts.max_decompressed_bytes, opts.max_trace_bytes, opts.http_timeout)
    )
    use_pii(opts.pii)


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
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    return EXIT_CLOSED_OUTPUT


def internal_error_status(exc: Exception, hint: str = "") -> int:
    """An exception no command expected: stdout's reader gone ends the command with
    :func:`closed_output_status`; anything else is one ``internal error`` line (``hint``
    after it) and exit status 2."""
    if is_closed_output(exc):
        raise typer.Exit(closed_output_status()) from None
    error_line(f"internal error: {type(exc).__name__}: {exc}{hint}")
    return exit_code(Outcome(internal_error=True))


def watch_source(opts: WatchOptions) -> Any:
    """The byte source: stdin, a followed file, a FIFO read live, or a regular file's path."""
    # the live readers load only when watch runs: start-up
    from ..follow import FdStream, FileFollower

    trace = opts.trace
    if trace is None or trace == "-":
        if opts.follow:
            raise UsageError("--follow needs a TRACE file to follow, not stdin")
        return FdStream(sys.stdin.fileno())
    if opts.follow:
        return FileFollower(trace, poll_interval=opts.poll_interval)
    try:
        regular = stat.S_ISREG(os.stat(trace).st_mode)
    except OSError:
        regular = True  # let the source report the missing file in its own words
    if regular:
        return trace
    return FdStream(os.open(trace, os.O_RDONLY), close_fd=True, name=trace)
